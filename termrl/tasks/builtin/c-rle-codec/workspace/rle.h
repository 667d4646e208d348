#ifndef RLE_H
#define RLE_H

#include <stddef.h>

/* Upper bound on the encoded size of any N-byte input (at most n + n/2 + 2). */
size_t rle_max_encoded(size_t n);

/* Encode IN[0..N) into OUT (which has room for rle_max_encoded(N) bytes).
   Returns the number of bytes written. */
size_t rle_encode(const unsigned char *in, size_t n, unsigned char *out);

/* Decode IN[0..N) into OUT, which has room for CAP bytes.
   Returns the decoded size, -1 if the input is malformed (a packet is incomplete),
   -2 if the output would be longer than CAP. Never writes more than CAP bytes. */
long rle_decode(const unsigned char *in, size_t n, unsigned char *out, size_t cap);

#endif
