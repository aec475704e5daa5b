package io.streamshard.runtime;

/** The free slots of the slot table: a stack of numbers under a lock (short critical sections). */
final class SlotPool {
    private final int[] stack;
    private int size;

    SlotPool(int slots) {
        stack = new int[slots];
        for (int i = 0; i < slots; i++) {
            stack[i] = slots - 1 - i;
        }
        size = slots;
    }

    /** A free slot, or -1 if none. */
    synchronized int take() {
        return size == 0 ? -1 : stack[--size];
    }

    synchronized void release(int slot) {
        if (size == stack.length) {
            throw new IllegalStateException("slot " + slot + " released twice");
        }
        stack[size++] = slot;
    }

    synchronized int size() {
        return size;
    }
}
