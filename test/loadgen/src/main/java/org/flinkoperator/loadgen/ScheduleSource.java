package org.flinkoperator.loadgen;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import org.apache.flink.api.connector.source.Boundedness;
import org.apache.flink.api.connector.source.Source;
import org.apache.flink.api.connector.source.SourceReader;
import org.apache.flink.api.connector.source.SourceReaderContext;
import org.apache.flink.api.connector.source.SplitEnumerator;
import org.apache.flink.api.connector.source.SplitEnumeratorContext;
import org.apache.flink.core.io.SimpleVersionedSerializer;

/**
 * An unbounded source following a rate schedule, written on the Source API (present in Flink
 * 1.x and 2.x alike; SourceFunction is gone in 2.0). Its splits (fixed in number) are spread
 * over the readers and redistributed by Flink on rescale.
 */
public final class ScheduleSource implements Source<Long, ScheduleSplit, Collection<ScheduleSplit>> {
    private static final long serialVersionUID = 1L;
    private final Schedule schedule;
    private final int splits;

    public ScheduleSource(Schedule schedule, int splits) {
        this.schedule = schedule;
        this.splits = splits;
    }

    @Override
    public Boundedness getBoundedness() {
        return Boundedness.CONTINUOUS_UNBOUNDED;
    }

    @Override
    public SourceReader<Long, ScheduleSplit> createReader(SourceReaderContext ctx) {
        return new ScheduleReader(schedule, ctx);
    }

    @Override
    public SplitEnumerator<ScheduleSplit, Collection<ScheduleSplit>> createEnumerator(
            SplitEnumeratorContext<ScheduleSplit> ctx) {
        // A fresh start (no checkpoint or savepoint): the splits start when a reader runs them.
        List<ScheduleSplit> all = new ArrayList<>();
        for (int i = 0; i < splits; i++) {
            all.add(new ScheduleSplit(i, splits, 0, 0));
        }
        return new ScheduleEnumerator(ctx, all);
    }

    @Override
    public SplitEnumerator<ScheduleSplit, Collection<ScheduleSplit>> restoreEnumerator(
            SplitEnumeratorContext<ScheduleSplit> ctx, Collection<ScheduleSplit> unassigned) {
        return new ScheduleEnumerator(ctx, unassigned);
    }

    @Override
    public SimpleVersionedSerializer<ScheduleSplit> getSplitSerializer() {
        return new ScheduleSplit.Serializer();
    }

    @Override
    public SimpleVersionedSerializer<Collection<ScheduleSplit>> getEnumeratorCheckpointSerializer() {
        return new EnumeratorStateSerializer();
    }

    /** The enumerator's state: the splits no reader has yet. */
    static final class EnumeratorStateSerializer implements SimpleVersionedSerializer<Collection<ScheduleSplit>> {
        @Override
        public int getVersion() {
            return 1;
        }

        @Override
        public byte[] serialize(Collection<ScheduleSplit> splits) throws IOException {
            ByteArrayOutputStream bytes = new ByteArrayOutputStream();
            try (DataOutputStream out = new DataOutputStream(bytes)) {
                out.writeInt(splits.size());
                for (ScheduleSplit s : splits) {
                    ScheduleSplit.Serializer.write(out, s);
                }
            }
            return bytes.toByteArray();
        }

        @Override
        public Collection<ScheduleSplit> deserialize(int version, byte[] data) throws IOException {
            ScheduleSplit.Serializer.checkVersion(version);
            try (DataInputStream in = new DataInputStream(new ByteArrayInputStream(data))) {
                int n = in.readInt();
                List<ScheduleSplit> out = new ArrayList<>(n);
                for (int i = 0; i < n; i++) {
                    out.add(ScheduleSplit.Serializer.read(in));
                }
                return out;
            }
        }
    }
}
