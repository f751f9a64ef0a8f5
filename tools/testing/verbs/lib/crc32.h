/* SPDX-License-Identifier: GPL-2.0 */
/* crc32_le: the CRC-32 of RoCE v2's ICRC, for test programs that build packets. */
#ifndef VT_CRC32_H
#define VT_CRC32_H

#include <stddef.h>
#include <stdint.h>

/* Reflected CRC-32 register update, no inversion (like the kernel's crc32_le). */
uint32_t crc32_le(uint32_t crc, const void *p, size_t n);

#endif
