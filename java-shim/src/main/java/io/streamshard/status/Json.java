package io.streamshard.status;

import java.util.Arrays;

/**
 * A small JSON writer for the status view (the agent brings no JSON library). Commas are placed
 * by the writer; every string is escaped.
 */
public final class Json {
    private final StringBuilder b = new StringBuilder(4096);
    /** Whether the current object or array has a member already, per nesting level. */
    private boolean[] more = new boolean[16];

    private int depth;
    private boolean afterKey;

    private void sep() {
        if (afterKey) {
            afterKey = false;
            return;
        }
        if (depth > 0) {
            if (more[depth]) {
                b.append(',');
            }
            more[depth] = true;
        }
    }

    private Json open(char c) {
        sep();
        b.append(c);
        if (++depth == more.length) {
            more = Arrays.copyOf(more, depth * 2);
        }
        more[depth] = false;
        return this;
    }

    private Json close(char c) {
        depth--;
        b.append(c);
        return this;
    }

    public Json object() {
        return open('{');
    }

    public Json end() {
        return close('}');
    }

    public Json array() {
        return open('[');
    }

    public Json endArray() {
        return close(']');
    }

    public Json key(String k) {
        sep();
        quote(k);
        b.append(':');
        afterKey = true;
        return this;
    }

    public Json value(String v) {
        sep();
        if (v == null) {
            b.append("null");
        } else {
            quote(v);
        }
        return this;
    }

    public Json value(long v) {
        sep();
        b.append(v);
        return this;
    }

    public Json value(boolean v) {
        sep();
        b.append(v);
        return this;
    }

    /** A number, or null. */
    public Json value(Long v) {
        sep();
        b.append(v == null ? "null" : v.toString());
        return this;
    }

    /** A value that is JSON already (from another writer). */
    public Json raw(String json) {
        sep();
        b.append(json);
        return this;
    }

    public Json field(String k, String v) {
        return key(k).value(v);
    }

    public Json field(String k, long v) {
        return key(k).value(v);
    }

    public Json field(String k, boolean v) {
        return key(k).value(v);
    }

    public Json field(String k, Long v) {
        return key(k).value(v);
    }

    /** An array of strings. */
    public Json field(String k, Iterable<String> values) {
        key(k).array();
        for (String v : values) {
            value(v);
        }
        return endArray();
    }

    private void quote(String s) {
        b.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"':
                    b.append("\\\"");
                    break;
                case '\\':
                    b.append("\\\\");
                    break;
                case '\n':
                    b.append("\\n");
                    break;
                case '\r':
                    b.append("\\r");
                    break;
                case '\t':
                    b.append("\\t");
                    break;
                default:
                    if (c < 0x20 || c == '\u2028' || c == '\u2029') {
                        b.append(String.format("\\u%04x", (int) c));
                    } else {
                        b.append(c);
                    }
            }
        }
        b.append('"');
    }

    @Override
    public String toString() {
        return b.toString();
    }
}
