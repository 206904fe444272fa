package org.flinkoperator.loadgen;

import java.util.concurrent.locks.LockSupport;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.functions.RichMapFunction;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.java.functions.KeySelector;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink;

/**
 * A Flink job whose load follows a schedule, for the autoscaler's tests: a source emitting at
 * the scheduled rate (and reporting the records it is behind as pendingRecords), a keyed map
 * that spends a set CPU time per record and counts records per key in state, and a sink that
 * discards. Three vertices: source → (hash) → busy map → (rebalance) → sink.
 *
 * <p>Arguments: {@code --schedule 200x60s,2000x120s,200x120s} (records per second for a
 * duration; the last step holds), {@code --cpu-micros-per-record N} (default 0),
 * {@code --work spin|park} (default spin: the time is spent in a busy loop; park sleeps it
 * instead, which Flink counts as busy all the same but costs no CPU, for small test machines),
 * {@code --keys N} (default 128), {@code --source-splits N} (default 4).
 */
public final class LoadGen {
    /** Operator names (and uids); the vertex names follow from them. */
    static final String SOURCE_NAME = "loadgen-source";
    static final String MAP_NAME = "busy-map";
    static final String SINK_NAME = "discard-sink";

    private LoadGen() {}

    public static void main(String[] args) throws Exception {
        Args a = Args.parse(args);
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.fromSource(new ScheduleSource(a.schedule, a.sourceSplits), WatermarkStrategy.noWatermarks(), SOURCE_NAME)
                .uid(SOURCE_NAME)
                .keyBy(new ModuloKey(a.keys))
                .map(new BusyCounter(a.cpuMicrosPerRecord, a.park))
                .name(MAP_NAME)
                .uid(MAP_NAME)
                .rebalance()
                .sinkTo(new DiscardingSink<>())
                .name(SINK_NAME)
                .uid(SINK_NAME);
        env.execute("loadgen " + a.schedule);
    }

    /** Spreads records over a fixed number of keys. */
    static final class ModuloKey implements KeySelector<Long, Long> {
        private static final long serialVersionUID = 1L;
        private final int keys;

        ModuloKey(int keys) {
            this.keys = keys;
        }

        @Override
        public Long getKey(Long value) {
            return value % keys;
        }
    }

    /**
     * Spends cpuMicros of CPU per record (a busy loop, so that the task's busy time follows the
     * rate) and counts records per key in keyed state, so that a restore is visible in the
     * checkpoint and the counts continue.
     */
    static final class BusyCounter extends RichMapFunction<Long, Long> {
        private static final long serialVersionUID = 1L;
        private final long cpuNanos;
        private final boolean park;
        private transient ValueState<Long> count;

        BusyCounter(long cpuMicros, boolean park) {
            this.cpuNanos = cpuMicros * 1000L;
            this.park = park;
        }

        @Override
        public void open(OpenContext ctx) {
            count = getRuntimeContext().getState(new ValueStateDescriptor<>("count", Long.class));
        }

        @Override
        public Long map(Long value) throws Exception {
            // Wall-clock time, so the busy time per record stays the same on a loaded machine.
            long end = System.nanoTime() + cpuNanos;
            for (long left = cpuNanos; left > 0; left = end - System.nanoTime()) {
                if (park) {
                    LockSupport.parkNanos(left);
                } else {
                    Thread.onSpinWait();
                }
            }
            Long c = count.value();
            long next = c == null ? 1 : c + 1;
            count.update(next);
            return next;
        }
    }

    /** The parsed command line. */
    static final class Args {
        Schedule schedule;
        long cpuMicrosPerRecord;
        boolean park;
        int keys = 128;
        int sourceSplits = 4;

        static Args parse(String[] args) {
            Args a = new Args();
            for (int i = 0; i < args.length; i++) {
                String name = args[i];
                if (i + 1 >= args.length) {
                    throw new IllegalArgumentException(name + " needs a value");
                }
                String value = args[++i];
                switch (name) {
                    case "--schedule":
                        a.schedule = Schedule.parse(value);
                        break;
                    case "--cpu-micros-per-record":
                        a.cpuMicrosPerRecord = positive(name, value, true);
                        break;
                    case "--work":
                        if (!value.equals("spin") && !value.equals("park")) {
                            throw new IllegalArgumentException("--work must be spin or park, got \"" + value + "\"");
                        }
                        a.park = value.equals("park");
                        break;
                    case "--keys":
                        a.keys = (int) positive(name, value, false);
                        break;
                    case "--source-splits":
                        a.sourceSplits = (int) positive(name, value, false);
                        break;
                    default:
                        throw new IllegalArgumentException("unknown argument " + name
                                + "; allowed: --schedule, --cpu-micros-per-record, --work, --keys, --source-splits");
                }
            }
            if (a.schedule == null) {
                throw new IllegalArgumentException("--schedule is required, e.g. --schedule 200x60s,2000x120s");
            }
            return a;
        }

        private static long positive(String name, String value, boolean zeroAllowed) {
            long v;
            try {
                v = Long.parseLong(value);
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException(name + " must be an integer, got \"" + value + "\"", e);
            }
            if (v < 0 || (v == 0 && !zeroAllowed) || v > Integer.MAX_VALUE) {
                throw new IllegalArgumentException(name + " must be " + (zeroAllowed ? ">= 0" : "> 0") + ", got " + v);
            }
            return v;
        }
    }
}
