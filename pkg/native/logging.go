package native

import (
	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
)

// Logging file names, as Flink's images and upstream's logConfiguration use them.
const (
	Log4jConsoleFile   = "log4j-console.properties"
	LogbackConsoleFile = "logback-console.xml"
)

// LoggingFiles returns the logging configuration files: the user's logConfiguration where
// given, else the defaults (console logging, as Flink's images ship).
func LoggingFiles(spec *flinkv1beta1.FlinkDeploymentSpec) map[string]string {
	files := map[string]string{Log4jConsoleFile: defaultLog4jConsole}
	for k, v := range spec.LogConfiguration {
		files[k] = v
	}
	return files
}

// defaultLog4jConsole logs to the console (kubectl logs) and to the file the Flink web UI reads.
const defaultLog4jConsole = `# Default logging of flink-operator clusters: console and the web UI's log file.
monitorInterval = 30
rootLogger.level = INFO
rootLogger.appenderRef.console.ref = ConsoleAppender
rootLogger.appenderRef.rolling.ref = RollingFileAppender

logger.pekko.name = org.apache.pekko
logger.pekko.level = INFO
logger.kafka.name = org.apache.kafka
logger.kafka.level = INFO
logger.hadoop.name = org.apache.hadoop
logger.hadoop.level = WARN
logger.zookeeper.name = org.apache.zookeeper
logger.zookeeper.level = INFO
logger.netty.name = org.jboss.netty.channel.DefaultChannelPipeline
logger.netty.level = OFF

appender.console.name = ConsoleAppender
appender.console.type = CONSOLE
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{yyyy-MM-dd HH:mm:ss,SSS} %-5p %-60c %x - %m%n

appender.rolling.name = RollingFileAppender
appender.rolling.type = RollingFile
appender.rolling.append = true
appender.rolling.fileName = ${sys:log.file}
appender.rolling.filePattern = ${sys:log.file}.%i
appender.rolling.layout.type = PatternLayout
appender.rolling.layout.pattern = %d{yyyy-MM-dd HH:mm:ss,SSS} %-5p %-60c %x - %m%n
appender.rolling.policies.type = Policies
appender.rolling.policies.size.type = SizeBasedTriggeringPolicy
appender.rolling.policies.size.size = 100MB
appender.rolling.strategy.type = DefaultRolloverStrategy
appender.rolling.strategy.max = 10
`
