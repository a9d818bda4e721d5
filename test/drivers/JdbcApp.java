// An application written for PostgreSQL, run unchanged against picoroute foreign tables with
// pgjdbc (Debian's libpostgresql-jdbc-java): getGeneratedKeys (pgjdbc appends RETURNING to the
// INSERT), prepared statements past pgjdbc's server-side prepare threshold and PostgreSQL's
// generic plan, and SQLSTATEs read with SQLException.getSQLState(). Prints one line per check,
// "ok ..." or "not ok ...", and exits 1 when a check failed. Run by test/t/072_drivers.pl:
//   java -cp /usr/share/java/postgresql.jar:DIR JdbcApp jdbc:postgresql://127.0.0.1:PORT/postgres USER
// The foreign table app_users (id bigint, name text, score bigint DEFAULT 7) must have no row of
// id 100 to 199.
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;

public class JdbcApp {
    static int failed = 0;

    static void check(boolean ok, String what) {
        System.out.println((ok ? "ok " : "not ok ") + what);
        if (!ok)
            failed++;
    }

    static void expectState(Connection c, String sql, String state) {
        try (Statement s = c.createStatement()) {
            s.execute(sql);
            check(false, sql + " fails with " + state);
        } catch (SQLException e) {
            check(state.equals(e.getSQLState()),
                  sql + " fails with " + state + " (got " + e.getSQLState() + ": " + e.getMessage() + ")");
        }
    }

    public static void main(String[] args) throws Exception {
        try (Connection c = DriverManager.getConnection(args[0], args[1], "")) {
            c.setAutoCommit(true);
            // getGeneratedKeys: pgjdbc sends INSERT ... RETURNING *.
            try (PreparedStatement p = c.prepareStatement(
                     "INSERT INTO app_users (id, name) VALUES (?, ?)", Statement.RETURN_GENERATED_KEYS)) {
                p.setLong(1, 100);
                p.setString(2, "jan");
                p.executeUpdate();
                ResultSet keys = p.getGeneratedKeys();
                check(keys.next() && keys.getLong("id") == 100 && keys.getLong("score") == 7,
                      "getGeneratedKeys returns the row (id and the local default)");
            }
            // Named generated columns: RETURNING "id".
            try (PreparedStatement p = c.prepareStatement(
                     "INSERT INTO app_users (id, name) VALUES (?, ?)", new String[] {"id"})) {
                long sum = 0;
                for (int i = 1; i <= 7; i++) {  // past prepareThreshold (5): a server-side statement
                    p.setLong(1, 100 + i);
                    p.setString(2, "k" + i);
                    p.executeUpdate();
                    ResultSet keys = p.getGeneratedKeys();
                    if (keys.next())
                        sum += keys.getLong(1);
                }
                check(sum == 7 * 100 + 28, "RETURNING id on seven prepared executions (sum " + sum + ")");
            }
            // A batch, as ORMs send bulk inserts.
            try (PreparedStatement p = c.prepareStatement("INSERT INTO app_users (id, name, score) VALUES (?, ?, ?)")) {
                for (int i = 0; i < 20; i++) {
                    p.setLong(1, 150 + i);
                    p.setString(2, "b" + i);
                    p.setLong(3, i);
                    p.addBatch();
                }
                int[] counts = p.executeBatch();
                check(counts.length == 20, "executeBatch of 20 rows");
            }
            // A prepared UPDATE run past the generic plan.
            try (PreparedStatement p = c.prepareStatement("UPDATE app_users SET name = ? WHERE id = ?")) {
                int updated = 0;
                for (int i = 0; i < 8; i++) {
                    p.setString(1, "u" + i);
                    p.setLong(2, 100);
                    updated += p.executeUpdate();
                }
                check(updated == 8, "a prepared UPDATE eight times (" + updated + " rows)");
            }
            expectState(c, "INSERT INTO app_users (id, name) VALUES (100, 'dup')", "23505");
            expectState(c, "INSERT INTO app_users (id, name) VALUES (199, NULL)", "23502");
            expectState(c, "UPDATE app_users SET score = score + 9223372036854775807 WHERE id = 100", "22003");
            expectState(c, "SELECT * FROM picoroute_exec('default', 1, 'SELECT \"score\" / 0 FROM \"app_users\" "
                               + "WHERE \"id\" = 100', '{}'::text[]) AS t(x bigint)", "22012");
            try (Statement s = c.createStatement();
                 ResultSet r = s.executeQuery("SELECT count(*) FROM app_users WHERE id BETWEEN 100 AND 199")) {
                r.next();
                check(r.getLong(1) == 28, "28 rows stored (" + r.getLong(1) + ")");
            }
        }
        System.exit(failed == 0 ? 0 : 1);
    }
}
