package org.flinkoperator.loadgen;

import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.Iterator;
import java.util.List;
import java.util.TreeMap;
import org.apache.flink.api.connector.source.SplitEnumerator;
import org.apache.flink.api.connector.source.SplitEnumeratorContext;
import org.apache.flink.api.connector.source.SplitsAssignment;

/**
 * Hands the splits no reader has to the registered readers, split i to reader i mod
 * parallelism. Splits a reader had come back here on failover and go out again when it
 * registers anew; on restore, Flink itself gives readers the splits of their state.
 */
final class ScheduleEnumerator implements SplitEnumerator<ScheduleSplit, Collection<ScheduleSplit>> {
    private final SplitEnumeratorContext<ScheduleSplit> ctx;
    private final TreeMap<Integer, ScheduleSplit> unassigned = new TreeMap<>();

    ScheduleEnumerator(SplitEnumeratorContext<ScheduleSplit> ctx, Collection<ScheduleSplit> splits) {
        this.ctx = ctx;
        for (ScheduleSplit s : splits) {
            unassigned.put(s.index, s);
        }
    }

    @Override
    public void start() {}

    @Override
    public void handleSplitRequest(int subtaskId, String requesterHostname) {
        // Readers never ask: splits are pushed on registration.
    }

    @Override
    public void addSplitsBack(List<ScheduleSplit> splits, int subtaskId) {
        for (ScheduleSplit s : splits) {
            unassigned.put(s.index, s);
        }
        assign();
    }

    @Override
    public void addReader(int subtaskId) {
        assign();
    }

    private void assign() {
        int parallelism = ctx.currentParallelism();
        for (int reader : ctx.registeredReaders().keySet()) {
            List<ScheduleSplit> mine = new ArrayList<>();
            for (Iterator<ScheduleSplit> it = unassigned.values().iterator(); it.hasNext(); ) {
                ScheduleSplit s = it.next();
                if (s.index % parallelism == reader) {
                    mine.add(s);
                    it.remove();
                }
            }
            if (!mine.isEmpty()) {
                ctx.assignSplits(new SplitsAssignment<>(Collections.singletonMap(reader, mine)));
            }
        }
    }

    @Override
    public Collection<ScheduleSplit> snapshotState(long checkpointId) {
        List<ScheduleSplit> out = new ArrayList<>();
        for (ScheduleSplit s : unassigned.values()) {
            out.add(s.copy());
        }
        return out;
    }

    @Override
    public void close() {}
}
