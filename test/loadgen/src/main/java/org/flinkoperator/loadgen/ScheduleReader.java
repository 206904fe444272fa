package org.flinkoperator.loadgen;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.apache.flink.api.connector.source.ReaderOutput;
import org.apache.flink.api.connector.source.SourceReader;
import org.apache.flink.api.connector.source.SourceReaderContext;
import org.apache.flink.core.io.InputStatus;
import org.apache.flink.metrics.Counter;
import org.apache.flink.metrics.Gauge;

/**
 * Emits its splits' records as they fall due. Records due but not yet emitted (because the
 * job is back-pressured, or was down) are reported as the standard pendingRecords metric, the
 * lag the autoscaler reads for a source.
 */
final class ScheduleReader implements SourceReader<Long, ScheduleSplit> {
    /** Records emitted per pollNext call at most, so that checkpoints are not held up. */
    private static final int BATCH = 1000;
    /** Longest wait for the next record, so that a rate change is noticed soon. */
    private static final long MAX_WAIT_MILLIS = 50;

    private final Schedule schedule;
    private final List<ScheduleSplit> splits = new CopyOnWriteArrayList<>();
    /** numRecordsIn of the source operator: records taken from "outside", as a queue reader counts them. */
    private final Counter recordsIn;
    private CompletableFuture<Void> available = new CompletableFuture<>();

    ScheduleReader(Schedule schedule, SourceReaderContext ctx) {
        this.schedule = schedule;
        this.recordsIn = ctx.metricGroup().getIOMetricGroup().getNumRecordsInCounter();
        ctx.metricGroup().setPendingRecordsGauge(this::pending);
        // The records this reader's splits emitted since the job's first start, restores
        // included: after a restore it continues rather than starting from zero.
        ctx.metricGroup().gauge("loadgenEmittedRecords", (Gauge<Long>) this::emitted);
    }

    @Override
    public void start() {}

    @Override
    public InputStatus pollNext(ReaderOutput<Long> output) {
        long now = System.currentTimeMillis();
        int budget = BATCH;
        boolean more = false;
        for (ScheduleSplit s : splits) {
            long due = s.due(schedule, now) - s.emitted;
            long n = Math.min(due, budget);
            for (long i = 0; i < n; i++) {
                output.collect(s.nextValue());
                s.emitted++;
            }
            recordsIn.inc(Math.max(0, n));
            budget -= (int) Math.max(0, n);
            more |= due > n;
        }
        if (more) {
            return InputStatus.MORE_AVAILABLE;
        }
        available = splits.isEmpty() ? new CompletableFuture<>() : wakeUp(now);
        return InputStatus.NOTHING_AVAILABLE;
    }

    /** Completes when the next record is due (roughly; at most MAX_WAIT_MILLIS from now). */
    private CompletableFuture<Void> wakeUp(long now) {
        long rate = schedule.rateAt(now - splits.get(0).startMillis);
        long wait = rate <= 0 ? MAX_WAIT_MILLIS : Math.max(1, Math.min(MAX_WAIT_MILLIS, 1000 * splits.get(0).splits / rate));
        return CompletableFuture.runAsync(() -> {}, CompletableFuture.delayedExecutor(wait, TimeUnit.MILLISECONDS));
    }

    @Override
    public List<ScheduleSplit> snapshotState(long checkpointId) {
        List<ScheduleSplit> out = new ArrayList<>();
        for (ScheduleSplit s : splits) {
            out.add(s.copy());
        }
        return out;
    }

    @Override
    public CompletableFuture<Void> isAvailable() {
        return available;
    }

    @Override
    public void addSplits(List<ScheduleSplit> added) {
        long now = System.currentTimeMillis();
        for (ScheduleSplit s : added) {
            if (s.startMillis == 0) {
                s.startMillis = now;
            }
        }
        splits.addAll(added);
        available.complete(null);
    }

    @Override
    public void notifyNoMoreSplits() {}

    @Override
    public void close() {}

    private long pending() {
        long now = System.currentTimeMillis();
        long sum = 0;
        for (ScheduleSplit s : splits) {
            sum += Math.max(0, s.due(schedule, now) - s.emitted);
        }
        return sum;
    }

    private long emitted() {
        long sum = 0;
        for (ScheduleSplit s : splits) {
            sum += s.emitted;
        }
        return sum;
    }
}
