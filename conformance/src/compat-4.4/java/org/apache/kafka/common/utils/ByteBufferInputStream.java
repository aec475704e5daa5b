package org.apache.kafka.common.utils;

import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;

/**
 * For running Kafka 4.3's published test classes on Kafka 4.4 and later, where this class moved to
 * {@code org.apache.kafka.common.utils.internals.ByteBufferInputStream} (the upgrade test's
 * assignor reads its subscription with it): 4.3's members, each handing over to the moved class.
 * Only on the conformance suite's class path, and only for those runtimes (see {@link Exit}).
 */
public final class ByteBufferInputStream extends InputStream {
    private final org.apache.kafka.common.utils.internals.ByteBufferInputStream in;

    public ByteBufferInputStream(ByteBuffer buffer) {
        in = new org.apache.kafka.common.utils.internals.ByteBufferInputStream(buffer);
    }

    @Override
    public int read() {
        return in.read();
    }

    @Override
    public int read(byte[] bytes, int off, int len) {
        return in.read(bytes, off, len);
    }

    @Override
    public int available() throws IOException {
        return in.available();
    }
}
