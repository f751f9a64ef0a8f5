// SPDX-License-Identifier: GPL-2.0
/*
 * Harness self-test only: a module whose init triggers a real WARN_ON(), so the
 * test runner's splat detection can be shown to fail a run. Never loaded by the
 * regular tests.
 */
#include <linux/module.h>
#include <linux/bug.h>

static int __init rrxe_selftest_warn_init(void)
{
	WARN(1, "rrxe harness self-test: deliberate warning\n");
	return 0;
}

static void __exit rrxe_selftest_warn_exit(void)
{
}

module_init(rrxe_selftest_warn_init);
module_exit(rrxe_selftest_warn_exit);
MODULE_DESCRIPTION("rrxe test-harness self-test: deliberate WARN");
MODULE_LICENSE("GPL");
