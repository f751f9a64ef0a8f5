// SPDX-License-Identifier: GPL-2.0
/*
 * Failure reasons, verbose logging and errno names.
 */
#define _GNU_SOURCE
#include <stdarg.h>

#include "vt.h"

int g_verbose;
char g_reason[1024];

void vlog(const char *fmt, ...)
{
	va_list ap;

	if (!g_verbose)
		return;
	va_start(ap, fmt);
	fputs("# ", stdout);
	vprintf(fmt, ap);
	fputc('\n', stdout);
	va_end(ap);
	fflush(stdout);
}

const char *errname(int e)
{
	static char buf[32];

	switch (e) {
	case 0: return "0";
	case EPERM: return "EPERM";
	case ENOENT: return "ENOENT";
	case EIO: return "EIO";
	case EBADF: return "EBADF";
	case EAGAIN: return "EAGAIN";
	case ENOMEM: return "ENOMEM";
	case EACCES: return "EACCES";
	case EFAULT: return "EFAULT";
	case EBUSY: return "EBUSY";
	case EEXIST: return "EEXIST";
	case ENODEV: return "ENODEV";
	case EINVAL: return "EINVAL";
	case ENOSPC: return "ENOSPC";
	case ERANGE: return "ERANGE";
	case ENOSYS: return "ENOSYS";
	case ENODATA: return "ENODATA";
	case EPROTONOSUPPORT: return "EPROTONOSUPPORT";
	case EOPNOTSUPP: return "EOPNOTSUPP";
	case EOVERFLOW: return "EOVERFLOW";
	case ENXIO: return "ENXIO";
	case ETIMEDOUT: return "ETIMEDOUT";
	default:
		snprintf(buf, sizeof(buf), "errno %d", e);
		return buf;
	}
}

/*
 * libibverbs calls return 0 or a positive errno; a few provider paths return
 * -1 with errno set, or a negative errno. Normalise to a positive errno.
 */
int rc_err(int rc)
{
	if (rc == -1)
		return errno ? errno : EIO;
	return rc < 0 ? -rc : rc;
}

/* Put `pfx: ` in front of the failure reason of a helper. */
void prefix_reason(const char *pfx)
{
	char tmp[sizeof(g_reason)];

	snprintf(tmp, sizeof(tmp), "%s", g_reason);
	snprintf(g_reason, sizeof(g_reason), "%s: %.900s", pfx, tmp);
}
