"""Spiral traversal and spiral filling of rectangular matrices (lists of lists)."""


def spiral_order(matrix, clockwise=True):
    """Return the elements of ``matrix`` in spiral order, starting at the top-left.

    clockwise=True: right, down, left, up, ... ; clockwise=False: down, right, up, left, ...
    Ragged rows raise ValueError. The input is not modified.

    >>> spiral_order([[1, 2, 3], [4, 5, 6], [7, 8, 9]])
    [1, 2, 3, 6, 9, 8, 7, 4, 5]
    >>> spiral_order([[1, 2, 3], [4, 5, 6], [7, 8, 9]], clockwise=False)
    [1, 4, 7, 8, 9, 6, 3, 2, 5]
    """
    raise NotImplementedError


def spiral_fill(rows, cols, start=1, clockwise=True):
    """Return a rows x cols matrix filled with start, start+1, ... in spiral order.

    Negative rows/cols raise ValueError.

    >>> spiral_fill(3, 4)
    [[1, 2, 3, 4], [10, 11, 12, 5], [9, 8, 7, 6]]
    """
    raise NotImplementedError
