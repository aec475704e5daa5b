package io.streamshard.status;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.junit.jupiter.api.Test;

class JsonTest {
    @Test
    void writesNestedValuesWithCommasAndEscapes() {
        String s = new Json()
                .object()
                .field("a", "x\"y\\z\n<\u0001>")
                .field("n", 3L)
                .field("none", (Long) null)
                .field("b", true)
                .field("list", List.of("p", "q"))
                .key("o")
                .object()
                .field("k", (String) null)
                .end()
                .key("arr")
                .array()
                .object()
                .end()
                .raw("{\"r\":1}")
                .value(-1L)
                .endArray()
                .end()
                .toString();
        assertThat(s)
                .isEqualTo("{\"a\":\"x\\\"y\\\\z\\n<\\u0001>\",\"n\":3,\"none\":null,\"b\":true,"
                        + "\"list\":[\"p\",\"q\"],\"o\":{\"k\":null},\"arr\":[{},{\"r\":1},-1]}");
    }

    @Test
    void deepNestingGrows() {
        Json j = new Json();
        for (int i = 0; i < 40; i++) {
            j.array();
        }
        for (int i = 0; i < 40; i++) {
            j.endArray();
        }
        assertThat(j.toString()).isEqualTo("[".repeat(40) + "]".repeat(40));
    }
}
