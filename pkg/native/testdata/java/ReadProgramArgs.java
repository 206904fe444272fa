import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.List;

import org.apache.flink.client.deployment.application.ApplicationConfiguration;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.GlobalConfiguration;

/**
 * Loads a configuration directory with Flink's own loader and prints the application's program
 * arguments as the application entrypoint reads them, one base64 line per argument.
 */
public class ReadProgramArgs {
    public static void main(String[] args) {
        Configuration conf = GlobalConfiguration.loadConfiguration(args[0]);
        List<String> programArgs = conf.get(ApplicationConfiguration.APPLICATION_ARGS);
        for (String a : programArgs) {
            System.out.println("ARG " + Base64.getEncoder().encodeToString(a.getBytes(StandardCharsets.UTF_8)));
        }
        System.out.println("END " + programArgs.size());
    }
}
