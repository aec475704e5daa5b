package io.streamshard.runtime;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

class KeyHashTest {

    private static byte[] range(int n) {
        byte[] b = new byte[n];
        for (int i = 0; i < n; i++) {
            b[i] = (byte) i;
        }
        return b;
    }

    /** Reference values of XXH64 with seed 0 (from the reference implementation's Python binding). */
    @Test
    void matchesXxh64() {
        assertThat(KeyHash.of(new byte[0])).isEqualTo(0xef46db3751d8e999L);
        assertThat(KeyHash.of("a".getBytes(StandardCharsets.US_ASCII))).isEqualTo(0xd24ec4f1a98c6e5bL);
        assertThat(KeyHash.of("abc".getBytes(StandardCharsets.US_ASCII))).isEqualTo(0x44bc2cf5ad770999L);
        assertThat(KeyHash.of("streamshard".getBytes(StandardCharsets.US_ASCII)))
                .isEqualTo(0x1a521448b1d2f4c2L);
        assertThat(KeyHash.of(range(31))).isEqualTo(0xc346d2b59b4d8ee1L);
        assertThat(KeyHash.of(range(32))).isEqualTo(0xcbf59c5116ff32b4L);
        assertThat(KeyHash.of(range(100))).isEqualTo(0x6ac1e58032166597L);
    }

    @Test
    void offsetAndLengthSelectTheKey() {
        byte[] framed = "xxabcyy".getBytes(StandardCharsets.US_ASCII);
        assertThat(KeyHash.of(framed, 2, 3)).isEqualTo(KeyHash.of("abc".getBytes(StandardCharsets.US_ASCII)));
    }
}
