#ifndef STACK_H
#define STACK_H

#include <stddef.h>

/* An opaque stack of long values. */
typedef struct Stack Stack;

/* Create an empty stack. Returns NULL if memory cannot be allocated. */
Stack *stack_new(void);

/* Release the stack and all memory it owns. stack_free(NULL) does nothing. */
void stack_free(Stack *s);

/* Push VALUE on top. Returns 0 on success, -1 if memory cannot be allocated
   (the stack is then unchanged). */
int stack_push(Stack *s, long value);

/* Remove the top value. Returns 0 on success and stores the removed value in *OUT
   unless OUT is NULL; returns -1 if the stack is empty (then *OUT is not touched). */
int stack_pop(Stack *s, long *out);

/* Store the top value in *OUT without removing it. Returns 0, or -1 if empty. */
int stack_peek(const Stack *s, long *out);

/* Number of values on the stack. */
size_t stack_size(const Stack *s);

/* Store the smallest value currently on the stack in *OUT, in O(1) time.
   Returns 0, or -1 if the stack is empty. */
int stack_min(const Stack *s, long *out);

/* Remove all values; the stack stays usable. */
void stack_clear(Stack *s);

/* Return an independent copy of S (same values, same order), or NULL if memory
   cannot be allocated. */
Stack *stack_clone(const Stack *s);

#endif
