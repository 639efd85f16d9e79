/** Java's Integer.MAX_VALUE: the largest value a signed 32-bit wire or file field carries (queue ids and counts, frame and segment sizes). */
export const INT32_MAX = 0x7fffffff;
