#ifndef CIPHER_H
#define CIPHER_H

/* Normalise any shift to the range 0..25. */
int cipher_normalise(long shift);

/* Shift one byte: ASCII letters are rotated by SHIFT (0..25) keeping their case;
   every other byte is returned unchanged. */
int cipher_shift(int c, int shift);

#endif
