package rocketbun.interop;

import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;
import org.apache.rocketmq.common.message.MessageExt;

/** Messages a consumer was handed, in arrival order (thread-safe), with waits on their bodies. */
public final class Received {
    private final List<MessageExt> msgs = new ArrayList<>();

    public synchronized void add(MessageExt m) {
        msgs.add(m);
    }

    public synchronized void addAll(Collection<MessageExt> ms) {
        msgs.addAll(ms);
    }

    public synchronized List<MessageExt> all() {
        return new ArrayList<>(msgs);
    }

    public synchronized int size() {
        return msgs.size();
    }

    public synchronized Set<String> bodies() {
        return msgs.stream().map(Ctx::body).collect(Collectors.toCollection(TreeSet::new));
    }

    /** Waits until every body in `expected` has arrived at least once. */
    public void awaitBodies(Set<String> expected, long timeoutMs) throws InterruptedException {
        Ctx.await(() -> bodies().containsAll(expected), timeoutMs, () -> {
            Set<String> missing = new TreeSet<>(expected);
            missing.removeAll(bodies());
            return "bodies; still missing " + missing.size() + ": " + first(missing);
        });
    }

    /** Checks that exactly `expected` arrived, each once. */
    public void checkExactly(Set<String> expected) {
        List<MessageExt> all = all();
        Set<String> got = bodies();
        Ctx.check(got.equals(expected), "delivered set differs: missing " + first(minus(expected, got)) + ", unexpected " + first(minus(got, expected)));
        Ctx.check(all.size() == expected.size(), "expected each of " + expected.size() + " messages once, got " + all.size() + " deliveries");
    }

    static Set<String> minus(Set<String> a, Set<String> b) {
        Set<String> r = new TreeSet<>(a);
        r.removeAll(b);
        return r;
    }

    static String first(Set<String> s) {
        return s.stream().limit(5).collect(Collectors.joining(",", "[", s.size() > 5 ? ",…]" : "]"));
    }
}
