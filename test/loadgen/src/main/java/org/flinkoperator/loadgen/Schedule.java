package org.flinkoperator.loadgen;

import java.io.Serializable;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/** A rate schedule: records per second for a duration, step after step; the last step holds. */
public final class Schedule implements Serializable {
    private static final long serialVersionUID = 1L;

    /** One step: rate records per second for durationMillis. */
    static final class Step implements Serializable {
        private static final long serialVersionUID = 1L;
        final long rate;
        final long durationMillis;

        Step(long rate, long durationMillis) {
            this.rate = rate;
            this.durationMillis = durationMillis;
        }
    }

    private final String text;
    private final List<Step> steps;

    private Schedule(String text, List<Step> steps) {
        this.text = text;
        this.steps = Collections.unmodifiableList(steps);
    }

    /** Parses "200x60s,2000x2m,200x500ms": RATExDURATION steps, durations in ms, s or m. */
    public static Schedule parse(String text) {
        List<Step> steps = new ArrayList<>();
        for (String part : text.split(",")) {
            String p = part.trim();
            int x = p.indexOf('x');
            if (x <= 0) {
                throw bad(text, p);
            }
            long rate;
            try {
                rate = Long.parseLong(p.substring(0, x));
            } catch (NumberFormatException e) {
                throw bad(text, p);
            }
            long millis = parseDuration(p.substring(x + 1));
            if (rate < 0 || rate > 100_000_000L || millis <= 0) {
                throw bad(text, p);
            }
            steps.add(new Step(rate, millis));
        }
        return new Schedule(text, steps);
    }

    private static long parseDuration(String d) {
        long unit;
        String n;
        if (d.endsWith("ms")) {
            unit = 1;
            n = d.substring(0, d.length() - 2);
        } else if (d.endsWith("s")) {
            unit = 1000;
            n = d.substring(0, d.length() - 1);
        } else if (d.endsWith("m")) {
            unit = 60_000;
            n = d.substring(0, d.length() - 1);
        } else {
            return -1;
        }
        try {
            long v = Long.parseLong(n);
            return v > 0 && v < Long.MAX_VALUE / 60_000 ? v * unit : -1;
        } catch (NumberFormatException e) {
            return -1;
        }
    }

    private static IllegalArgumentException bad(String text, String step) {
        return new IllegalArgumentException("--schedule \"" + text + "\": step \"" + step
                + "\" must be RATExDURATION (records per second, duration in ms, s or m), e.g. 200x60s,2000x2m");
    }

    /** Records due in total elapsedMillis after the start. */
    public long expected(long elapsedMillis) {
        long left = Math.max(0, elapsedMillis);
        long milliRecords = 0;
        for (int i = 0; i < steps.size() && left > 0; i++) {
            Step s = steps.get(i);
            long span = i == steps.size() - 1 ? left : Math.min(left, s.durationMillis);
            milliRecords += s.rate * span;
            left -= span;
        }
        return milliRecords / 1000;
    }

    /** The rate (records per second) at elapsedMillis after the start. */
    public long rateAt(long elapsedMillis) {
        long left = Math.max(0, elapsedMillis);
        for (int i = 0; i < steps.size() - 1; i++) {
            if (left < steps.get(i).durationMillis) {
                return steps.get(i).rate;
            }
            left -= steps.get(i).durationMillis;
        }
        return steps.get(steps.size() - 1).rate;
    }

    @Override
    public String toString() {
        return text;
    }
}
