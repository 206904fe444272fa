package org.flinkoperator.loadgen;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import org.apache.flink.api.connector.source.SourceSplit;
import org.apache.flink.core.io.SimpleVersionedSerializer;

/**
 * One of the source's splits: it emits every splits-th record of the schedule, starting at its
 * index, so that the splits together follow the schedule's rate. Its state is how many records
 * it emitted and when its schedule started (when a reader first ran it, so that the time the
 * job took to deploy does not eat into the first step), so a restored job continues the
 * schedule where the wall clock is and catches up what it missed (as a lagging consumer of a
 * queue would).
 */
public final class ScheduleSplit implements SourceSplit {
    final int index;
    final int splits;
    /** When the schedule started; 0 until a reader first runs the split. */
    long startMillis;
    /** Written by the task thread, read by the metric reporter's. */
    volatile long emitted;

    ScheduleSplit(int index, int splits, long startMillis, long emitted) {
        this.index = index;
        this.splits = splits;
        this.startMillis = startMillis;
        this.emitted = emitted;
    }

    @Override
    public String splitId() {
        return Integer.toString(index);
    }

    /** Records of this split due at nowMillis (none before the split started). */
    long due(Schedule schedule, long nowMillis) {
        if (startMillis == 0) {
            return 0;
        }
        long total = schedule.expected(nowMillis - startMillis);
        return total > index ? (total - index + splits - 1) / splits : 0;
    }

    /** The value of this split's next record (a global sequence number). */
    long nextValue() {
        return index + emitted * splits;
    }

    ScheduleSplit copy() {
        return new ScheduleSplit(index, splits, startMillis, emitted);
    }

    /** Serializes splits (and, as lists, the enumerator's state). */
    static final class Serializer implements SimpleVersionedSerializer<ScheduleSplit> {
        @Override
        public int getVersion() {
            return 1;
        }

        @Override
        public byte[] serialize(ScheduleSplit s) throws IOException {
            ByteArrayOutputStream bytes = new ByteArrayOutputStream();
            try (DataOutputStream out = new DataOutputStream(bytes)) {
                write(out, s);
            }
            return bytes.toByteArray();
        }

        @Override
        public ScheduleSplit deserialize(int version, byte[] data) throws IOException {
            checkVersion(version);
            try (DataInputStream in = new DataInputStream(new ByteArrayInputStream(data))) {
                return read(in);
            }
        }

        static void write(DataOutputStream out, ScheduleSplit s) throws IOException {
            out.writeInt(s.index);
            out.writeInt(s.splits);
            out.writeLong(s.startMillis);
            out.writeLong(s.emitted);
        }

        static ScheduleSplit read(DataInputStream in) throws IOException {
            return new ScheduleSplit(in.readInt(), in.readInt(), in.readLong(), in.readLong());
        }

        static void checkVersion(int version) throws IOException {
            if (version != 1) {
                throw new IOException("unknown loadgen split version " + version + "; this build reads version 1");
            }
        }
    }
}
