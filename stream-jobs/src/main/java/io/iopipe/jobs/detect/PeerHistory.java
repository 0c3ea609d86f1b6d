package io.iopipe.jobs.detect;

import java.util.ArrayList;
import java.util.List;

/** One drive's assessed hours against its peers, over the last {@link SlowVsPeers#HORIZON_NS}: keyed state of its host. */
public class PeerHistory {
    public List<Long> hourStartNs = new ArrayList<>();
    /** ln(latency / peers' fit at the same throughput), the median of the hour's windows. */
    public List<Double> logSlowdown = new ArrayList<>();
    public List<Boolean> slow = new ArrayList<>();
    /** The open slow_vs_peers episode: its anomaly and when it last held; null when none is open. */
    public String anomalyId;
    public long episodeStartNs;
    public long episodeLastNs;
    /** What the last assessment said about the drive's health, a {@link Finding.HealthEffect} name. */
    public String effect = Finding.HealthEffect.NONE.name();

    public PeerHistory() {}

    void add(long hourStart, double logSlowdownOfHour, boolean slowHour) {
        hourStartNs.add(hourStart);
        logSlowdown.add(logSlowdownOfHour);
        slow.add(slowHour);
    }

    /** Drops the hours before {@code sinceNs}. */
    void forgetBefore(long sinceNs) {
        int old = 0;
        while (old < hourStartNs.size() && hourStartNs.get(old) < sinceNs) {
            old++;
        }
        hourStartNs.subList(0, old).clear();
        logSlowdown.subList(0, old).clear();
        slow.subList(0, old).clear();
    }

    /** Slow in each of its last {@code n} assessed hours. */
    boolean slowInLast(int n) {
        int size = slow.size();
        return size >= n && slow.subList(size - n, size).stream().allMatch(s -> s);
    }

    int slowInARow() {
        int run = 0;
        for (int i = slow.size() - 1; i >= 0 && slow.get(i); i--) {
            run++;
        }
        return run;
    }

    long slowHours() {
        return slow.stream().filter(s -> s).count();
    }

    /** The distinct days (UTC) with a slow hour. */
    long slowDays() {
        List<Long> days = new ArrayList<>();
        for (int i = 0; i < slow.size(); i++) {
            long day = Math.floorDiv(hourStartNs.get(i), SlowVsPeers.DAY_NS);
            if (slow.get(i) && !days.contains(day)) {
                days.add(day);
            }
        }
        return days.size();
    }

    boolean isEmpty() {
        return hourStartNs.isEmpty();
    }
}
