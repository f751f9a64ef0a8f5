// SPDX-License-Identifier: GPL-2.0
/* crc32_le (crc32.h): table-driven, polynomial 0xedb88320. */
#include "crc32.h"

static uint32_t crc_table[256];

static void crc_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;

		for (int k = 0; k < 8; k++)
			c = (c & 1) ? 0xedb88320u ^ (c >> 1) : c >> 1;
		crc_table[i] = c;
	}
}

uint32_t crc32_le(uint32_t crc, const void *p, size_t n)
{
	const uint8_t *b = p;

	if (!crc_table[1])
		crc_init();
	while (n--)
		crc = crc_table[(crc ^ *b++) & 0xff] ^ (crc >> 8);
	return crc;
}
