package io.github.flinkoperator.examples.sqlrunner;

import java.util.ArrayList;
import java.util.List;

/**
 * Splits a SQL script into statements. A semicolon ends a statement only outside string literals
 * ('...'), quoted identifiers (`...`, "...") and comments (-- to the end of the line, and block
 * comments). Comments stay in the statement text, since block comments starting with a plus sign
 * are Flink's query hints; a piece holding only comments and blanks is no statement.
 */
final class SqlScript {

    /** One statement of the script and the line it starts on (1-based), for error messages. */
    static final class Statement {
        /** As written, comments (and hints) included: what Flink parses. */
        final String text;
        /** Without comments: what the runner recognises its own statements (SET, statement sets) by. */
        final String code;
        final int line;

        Statement(String text, String code, int line) {
            this.text = text;
            this.code = code;
            this.line = line;
        }

        @Override
        public String toString() {
            return "line " + line + ": " + text;
        }
    }

    private SqlScript() {}

    static List<Statement> split(String script) {
        List<Statement> out = new ArrayList<>();
        StringBuilder cur = new StringBuilder();
        StringBuilder code = new StringBuilder();
        boolean hasCode = false; // cur holds more than comments and blanks
        int line = 1;
        int startLine = 1;
        int n = script.length();
        for (int i = 0; i < n; ) {
            char c = script.charAt(i);
            char next = i + 1 < n ? script.charAt(i + 1) : 0;
            int end;
            if (c == '\'' || c == '"' || c == '`') {
                // A doubled quote is an escaped one: it closes and reopens, which splits the same.
                end = script.indexOf(c, i + 1);
                if (end < 0) {
                    throw new IllegalArgumentException(
                            "line " + line + ": unterminated " + quoteName(c) + " (no closing " + c + ")");
                }
                end++;
            } else if (c == '-' && next == '-') {
                end = script.indexOf('\n', i);
                end = end < 0 ? n : end;
            } else if (c == '/' && next == '*') {
                end = script.indexOf("*/", i + 2);
                if (end < 0) {
                    throw new IllegalArgumentException("line " + line + ": unterminated block comment (no closing */)");
                }
                end += 2;
            } else if (c == ';') {
                if (hasCode) {
                    out.add(new Statement(cur.toString().trim(), code.toString().trim(), startLine));
                }
                cur.setLength(0);
                code.setLength(0);
                hasCode = false;
                i++;
                continue;
            } else {
                end = i + 1;
            }
            String piece = script.substring(i, end);
            boolean comment = c == '-' && next == '-' || c == '/' && next == '*';
            if (!comment && !Character.isWhitespace(c)) {
                if (!hasCode) {
                    startLine = line;
                }
                hasCode = true;
            }
            cur.append(piece);
            code.append(comment ? " " : piece);
            line += count(piece, '\n');
            i = end;
        }
        if (hasCode) {
            out.add(new Statement(cur.toString().trim(), code.toString().trim(), startLine));
        }
        return out;
    }

    private static String quoteName(char c) {
        return c == '\'' ? "string literal" : "quoted identifier";
    }

    private static int count(String s, char c) {
        int k = 0;
        for (int i = 0; i < s.length(); i++) {
            if (s.charAt(i) == c) {
                k++;
            }
        }
        return k;
    }
}
