package io.github.flinkoperator.examples.sqlrunner;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.stream.Collectors;

import org.junit.jupiter.api.Test;

class SqlScriptTest {

    private static List<String> texts(String script) {
        return SqlScript.split(script).stream().map(s -> s.text).collect(Collectors.toList());
    }

    @Test
    void semicolonsInLiteralsAndIdentifiersDoNotSplit() {
        assertEquals(
                List.of("SELECT 'a;b', `x;y`, \"p;q\" FROM t", "SELECT 'it''s; fine'"),
                texts("SELECT 'a;b', `x;y`, \"p;q\" FROM t;\nSELECT 'it''s; fine';"));
    }

    @Test
    void semicolonsInCommentsDoNotSplit() {
        assertEquals(
                List.of("-- first; not an end\nSELECT 1 /* two; three */ + 1", "SELECT 2"),
                texts("-- first; not an end\nSELECT 1 /* two; three */ + 1;\nSELECT 2"));
    }

    @Test
    void commentOnlyPiecesAreNoStatements() {
        assertEquals(List.of("SELECT 1"), texts("SELECT 1;\n-- the end;\n/* really; */\n;;"));
        assertTrue(texts("  \n-- nothing\n").isEmpty());
    }

    @Test
    void hintsStayInTheStatement() {
        assertEquals(List.of("SELECT /*+ OPTIONS('k'='v;w') */ * FROM t"), texts("SELECT /*+ OPTIONS('k'='v;w') */ * FROM t;"));
    }

    @Test
    void codeIsTheStatementWithoutComments() {
        List<SqlScript.Statement> got = SqlScript.split("-- set it; now\nSET 'k' = 'v;w' /* why; */;\nSELECT /*+ hint */ 1");
        assertEquals("SET 'k' = 'v;w'", got.get(0).code);
        assertEquals("SELECT   1", got.get(1).code);
        assertEquals("SELECT /*+ hint */ 1", got.get(1).text);
    }

    @Test
    void statementsKnowTheirFirstLine() {
        List<SqlScript.Statement> got = SqlScript.split("-- header\n\nCREATE TABLE t (\n  s STRING\n);\n\nINSERT INTO t\nSELECT 'x\ny';");
        assertEquals(3, got.get(0).line);
        assertEquals(7, got.get(1).line);
    }

    @Test
    void unterminatedQuotesAndCommentsAreErrors() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> SqlScript.split("SELECT 1;\nSELECT 'oops;"));
        assertEquals("line 2: unterminated string literal (no closing ')", e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> SqlScript.split("SELECT 1 /* no end;"));
        assertEquals("line 1: unterminated block comment (no closing */)", e.getMessage());
    }
}
