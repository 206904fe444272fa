package io.github.flinkoperator.examples.sqlrunner;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.List;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.apache.flink.configuration.Configuration;
import org.apache.flink.table.api.EnvironmentSettings;
import org.apache.flink.table.api.StatementSet;
import org.apache.flink.table.api.TableEnvironment;

/**
 * Runs the statements of a SQL file, given as the only argument, on Flink's Table API: the job
 * of an application cluster whose FlinkDeployment mounts the file (a ConfigMap volume).
 *
 * <p>Besides what {@link TableEnvironment#executeSql} runs, it understands what the SQL client
 * does itself: {@code SET 'key' = 'value'} (the ones before the first other statement configure
 * the environment as it is created, so {@code execution.runtime-mode} can be set there), and
 * statement sets, {@code BEGIN STATEMENT SET; INSERT ...; END;} or {@code EXECUTE STATEMENT SET
 * BEGIN INSERT ...; END;}, which run their INSERTs as one job.
 */
public final class SqlRunner {

    private static final Pattern SET =
            Pattern.compile("SET\\s+'((?:[^']|'')*)'\\s*=\\s*'((?:[^']|'')*)'", Pattern.CASE_INSENSITIVE | Pattern.DOTALL);
    private static final Pattern BEGIN_SET =
            Pattern.compile("(BEGIN\\s+STATEMENT\\s+SET|EXECUTE\\s+STATEMENT\\s+SET\\s+BEGIN)(\\s+.*)?", Pattern.CASE_INSENSITIVE | Pattern.DOTALL);
    private static final Pattern END = Pattern.compile("END", Pattern.CASE_INSENSITIVE);

    private SqlRunner() {}

    public static void main(String[] args) throws Exception {
        if (args.length != 1) {
            throw new IllegalArgumentException("usage: SqlRunner <script.sql>: want exactly one argument, the SQL file, got " + args.length);
        }
        Path path = Paths.get(args[0]);
        List<SqlScript.Statement> statements =
                SqlScript.split(new String(Files.readAllBytes(path), StandardCharsets.UTF_8));
        if (statements.isEmpty()) {
            throw new IllegalArgumentException(path + ": no SQL statements");
        }

        Configuration initial = new Configuration();
        int first = 0;
        for (; first < statements.size(); first++) {
            Matcher m = SET.matcher(statements.get(first).code);
            if (!m.matches()) {
                break;
            }
            initial.setString(unquote(m.group(1)), unquote(m.group(2)));
            log(path, statements.get(first), "environment option");
        }
        TableEnvironment tEnv = TableEnvironment.create(EnvironmentSettings.newInstance().withConfiguration(initial).build());

        StatementSet set = null;
        for (SqlScript.Statement s : statements.subList(first, statements.size())) {
            Matcher setOption = SET.matcher(s.code);
            Matcher begin = BEGIN_SET.matcher(s.code);
            try {
                if (set != null) {
                    if (END.matcher(s.code).matches()) {
                        log(path, s, "statement set submitted");
                        set.execute();
                        set = null;
                    } else {
                        set.addInsertSql(s.text);
                    }
                } else if (setOption.matches()) {
                    tEnv.getConfig().set(unquote(setOption.group(1)), unquote(setOption.group(2)));
                    log(path, s, "option");
                } else if (begin.matches()) {
                    set = tEnv.createStatementSet();
                    String rest = begin.group(2) == null ? "" : begin.group(2).trim();
                    if (!rest.isEmpty()) { // EXECUTE STATEMENT SET BEGIN INSERT ...; the first INSERT
                        set.addInsertSql(rest);
                    }
                } else {
                    log(path, s, "executing");
                    tEnv.executeSql(s.text);
                }
            } catch (RuntimeException e) {
                throw new IllegalStateException(path + ":" + s.line + ": " + e.getMessage(), e);
            }
        }
        if (set != null) {
            throw new IllegalArgumentException(path + ": statement set not closed: END; is missing");
        }
    }

    private static String unquote(String s) {
        return s.replace("''", "'");
    }

    private static void log(Path path, SqlScript.Statement s, String what) {
        String first = s.code.split("\n", 2)[0];
        System.out.printf(Locale.ROOT, "sql-runner: %s:%d: %s: %s%n", path.getFileName(), s.line, what, first);
    }
}
