package io.streamshard.examples;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The spans OpenTelemetry's {@code logging-otlp} exporter wrote to a JVM's output: one JSON
 * document (OTLP's ExportTraceServiceRequest) per exported batch, one per line. A small JSON
 * reader of its own, so the tests need no JSON library.
 */
final class Spans {
    private Spans() {}

    /** One span: ids as hex, kind as OTLP's number (1 internal, 2 server, 3 client, 4 producer, 5 consumer). */
    static final class Span {
        final String traceId;
        final String spanId;
        final String parentSpanId;
        final String name;
        final int kind;
        final Map<String, String> attributes;
        final int status;
        final long start;
        final long end;
        /** The names of its events ("exception" for a recorded exception). */
        final List<String> events = new ArrayList<>();
        /** The message of its recorded exception, "" if none. */
        String exceptionMessage = "";

        Span(Map<String, Object> s) {
            traceId = (String) s.get("traceId");
            spanId = (String) s.get("spanId");
            parentSpanId = (String) s.getOrDefault("parentSpanId", "");
            name = (String) s.get("name");
            kind = ((Number) s.getOrDefault("kind", 0)).intValue();
            attributes = new HashMap<>();
            for (Object a : list(s.get("attributes"))) {
                Map<?, ?> m = (Map<?, ?>) a;
                Map<?, ?> v = (Map<?, ?>) m.get("value");
                Object value =
                        v == null || v.isEmpty() ? null : v.values().iterator().next();
                attributes.put((String) m.get("key"), String.valueOf(value));
            }
            Map<?, ?> st = (Map<?, ?>) s.get("status");
            status = st == null || st.get("code") == null ? 0 : ((Number) st.get("code")).intValue();
            start = Long.parseLong(String.valueOf(s.get("startTimeUnixNano")));
            end = Long.parseLong(String.valueOf(s.get("endTimeUnixNano")));
            for (Object e : list(s.get("events"))) {
                Map<?, ?> event = (Map<?, ?>) e;
                events.add(String.valueOf(event.get("name")));
                for (Object a : list(event.get("attributes"))) {
                    Map<?, ?> m = (Map<?, ?>) a;
                    if ("exception.message".equals(m.get("key")) || "exception.stacktrace".equals(m.get("key"))) {
                        exceptionMessage += String.valueOf(m.get("value"));
                    }
                }
            }
        }

        @Override
        public String toString() {
            return name + "(" + traceId + "/" + spanId + " <- " + parentSpanId + ")";
        }
    }

    /** Every span in {@code output}'s lines that hold an OTLP trace export. */
    static List<Span> in(List<String> output) {
        List<Span> spans = new ArrayList<>();
        for (String line : output) {
            int at = line.indexOf("{\"resource");
            if (at < 0) {
                continue;
            }
            Object doc = new Reader(line.substring(at)).value();
            collect(doc, spans);
        }
        return spans;
    }

    @SuppressWarnings("unchecked")
    private static void collect(Object node, List<Span> into) {
        if (node instanceof Map) {
            Map<String, Object> m = (Map<String, Object>) node;
            if (m.containsKey("spanId") && m.containsKey("traceId") && m.containsKey("name")) {
                into.add(new Span(m));
                return;
            }
            m.values().forEach(v -> collect(v, into));
        } else if (node instanceof List) {
            ((List<Object>) node).forEach(v -> collect(v, into));
        }
    }

    private static List<?> list(Object o) {
        return o instanceof List ? (List<?>) o : List.of();
    }

    /** Just enough JSON: objects, arrays, strings with escapes, numbers, true/false/null. */
    private static final class Reader {
        private final String s;
        private int i;

        Reader(String s) {
            this.s = s;
        }

        Object value() {
            skip();
            char c = s.charAt(i);
            if (c == '{') {
                Map<String, Object> m = new LinkedHashMap<>();
                i++;
                skip();
                if (s.charAt(i) == '}') {
                    i++;
                    return m;
                }
                while (true) {
                    skip();
                    String k = string();
                    skip();
                    expect(':');
                    m.put(k, value());
                    skip();
                    if (s.charAt(i++) == '}') {
                        return m;
                    }
                }
            }
            if (c == '[') {
                List<Object> l = new ArrayList<>();
                i++;
                skip();
                if (s.charAt(i) == ']') {
                    i++;
                    return l;
                }
                while (true) {
                    l.add(value());
                    skip();
                    if (s.charAt(i++) == ']') {
                        return l;
                    }
                }
            }
            if (c == '"') {
                return string();
            }
            int start = i;
            while (i < s.length() && ",]} \t".indexOf(s.charAt(i)) < 0) {
                i++;
            }
            String word = s.substring(start, i);
            switch (word) {
                case "true":
                    return Boolean.TRUE;
                case "false":
                    return Boolean.FALSE;
                case "null":
                    return null;
                default:
                    return word.contains(".") || word.contains("e")
                            ? (Number) Double.valueOf(word)
                            : Long.valueOf(word);
            }
        }

        private String string() {
            expect('"');
            StringBuilder b = new StringBuilder();
            while (true) {
                char c = s.charAt(i++);
                if (c == '"') {
                    return b.toString();
                }
                if (c == '\\') {
                    char e = s.charAt(i++);
                    if (e == 'u') {
                        b.append((char) Integer.parseInt(s.substring(i, i + 4), 16));
                        i += 4;
                    } else {
                        b.append(
                                e == 'n'
                                        ? '\n'
                                        : e == 't' ? '\t' : e == 'r' ? '\r' : e == 'b' ? '\b' : e == 'f' ? '\f' : e);
                    }
                } else {
                    b.append(c);
                }
            }
        }

        private void expect(char c) {
            if (s.charAt(i) != c) {
                throw new IllegalArgumentException(
                        "expected '" + c + "' at " + i + ": " + s.substring(i, Math.min(s.length(), i + 40)));
            }
            i++;
        }

        private void skip() {
            while (i < s.length() && Character.isWhitespace(s.charAt(i))) {
                i++;
            }
        }
    }
}
