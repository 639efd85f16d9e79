package rocketbun.interop;

import static rocketbun.interop.Ctx.body;
import static rocketbun.interop.Ctx.bytes;
import static rocketbun.interop.Ctx.check;
import static rocketbun.interop.SendScenarios.collect;
import static rocketbun.interop.SendScenarios.msg;

import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.rocketmq.client.consumer.DefaultLitePullConsumer;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.MessageSelector;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.ConsumeOrderlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.consumer.listener.MessageListenerOrderly;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;

/** Consumer scenarios: clustering with rebalance, broadcast, SQL92, orderly, lite pull, retry → DLQ, delay levels. */
final class ConsumeScenarios {
    private ConsumeScenarios() {}

    static void register(Map<String, Scenario> m) {
        m.put("push-rebalance", ConsumeScenarios::pushRebalance);
        m.put("broadcast", ConsumeScenarios::broadcast);
        m.put("sql92", ConsumeScenarios::sql92);
        m.put("orderly", ConsumeScenarios::orderly);
        m.put("lite-pull-subscribe", ConsumeScenarios::litePullSubscribe);
        m.put("lite-pull-assign", ConsumeScenarios::litePullAssign);
        m.put("retry-dlq", ConsumeScenarios::retryDlq);
        m.put("delay-level", ConsumeScenarios::delayLevel);
        m.put("retry-first-run", ConsumeScenarios::retryFirstRun);
        m.put("orderly-handover", ConsumeScenarios::orderlyHandover);
    }

    /** The queue ids of `topic` a push consumer holds (its rebalance's process queue table). */
    static Set<Integer> owned(DefaultMQPushConsumer c, String topic) {
        Set<Integer> ids = new TreeSet<>();
        for (MessageQueue q : c.getDefaultMQPushConsumerImpl().getRebalanceImpl().getProcessQueueTable().keySet()) {
            if (q.getTopic().equals(topic)) ids.add(q.getQueueId());
        }
        return ids;
    }

    static Set<String> send(DefaultMQProducer p, String topic, String tag, int from, int to) throws Exception {
        Set<String> bodies = new TreeSet<>();
        for (int i = from; i < to; i++) {
            String b = "m-" + i;
            p.send(msg(topic, tag, "k-" + b, b));
            bodies.add(b);
        }
        return bodies;
    }

    static String pushRebalance(Ctx ctx) throws Exception {
        String topic = ctx.topic("t");
        ctx.createTopic(topic, 8);
        DefaultMQProducer p = ctx.producer(ctx.group("p"));
        String group = ctx.group("c");
        Received a = new Received();
        Received b = new Received();
        DefaultMQPushConsumer ca = collect(ctx, group, topic, "*", a);
        Ctx.await(() -> owned(ca, topic).size() == 8, 20_000, () -> "the first consumer to own all 8 queues: " + owned(ca, topic));
        Set<String> all = new TreeSet<>(send(p, topic, "TagA", 0, 40));
        DefaultMQPushConsumer cb = collect(ctx, group, topic, "*", b);
        ctx.progress("waiting for a 4/4 split");
        Ctx.await(() -> {
            Set<Integer> qa = owned(ca, topic);
            Set<Integer> qb = owned(cb, topic);
            Set<Integer> both = new HashSet<>(qa);
            both.addAll(qb);
            return qa.size() == 4 && qb.size() == 4 && both.size() == 8;
        }, 30_000, () -> "a 4/4 split after the second consumer joined: " + owned(ca, topic) + " / " + owned(cb, topic));
        all.addAll(send(p, topic, "TagA", 40, 80));
        Ctx.await(() -> {
            Set<String> got = new TreeSet<>(a.bodies());
            got.addAll(b.bodies());
            return got.containsAll(all);
        }, 20_000, () -> "all 80 messages across both consumers");
        check(b.size() > 0, "the consumer that joined got nothing");
        cb.shutdown();
        ctx.progress("waiting for the first consumer to take all queues back");
        Ctx.await(() -> owned(ca, topic).size() == 8, 30_000, () -> "the remaining consumer to own all 8 queues again: " + owned(ca, topic));
        Set<String> last = send(p, topic, "TagA", 80, 120);
        all.addAll(last);
        a.awaitBodies(last, 20_000);
        Set<String> got = new TreeSet<>(a.bodies());
        got.addAll(b.bodies());
        check(got.equals(all), "delivered set differs from sent");
        int dup = a.size() + b.size() - all.size();
        return "8 queues: 8/0, then 4/4 on join, then 8/0 on leave; 120 delivered (" + dup + " redelivered around rebalances)";
    }

    static String broadcast(Ctx ctx) throws Exception {
        String topic = ctx.topic("t");
        ctx.createTopic(topic, 4);
        String group = ctx.group("c");
        List<Received> got = new ArrayList<>();
        for (int i = 0; i < 2; i++) {
            Received r = new Received();
            got.add(r);
            DefaultMQPushConsumer c = ctx.pushConsumer(group);
            broadcasting(c);
            c.subscribe(topic, "*");
            c.registerMessageListener((MessageListenerConcurrently) (msgs, context) -> {
                r.addAll(msgs);
                return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
            });
            ctx.start(c);
            Ctx.await(() -> owned(c, topic).size() == 4, 20_000, () -> "a broadcast consumer to own every queue");
        }
        Set<String> sent = send(ctx.producer(ctx.group("p")), topic, "TagA", 0, 20);
        for (Received r : got) {
            r.awaitBodies(sent, 20_000);
        }
        Thread.sleep(300);
        for (Received r : got) r.checkExactly(sent);
        return "2 broadcast consumers of one group each got all 20 once";
    }

    /** MessageModel moved package between 4.x and 5.x: set BROADCASTING through the setter's own parameter type. */
    @SuppressWarnings({"unchecked", "rawtypes"})
    static void broadcasting(DefaultMQPushConsumer c) throws Exception {
        for (java.lang.reflect.Method m : DefaultMQPushConsumer.class.getMethods()) {
            if (m.getName().equals("setMessageModel")) {
                Class<? extends Enum> type = (Class<? extends Enum>) m.getParameterTypes()[0];
                m.invoke(c, Enum.valueOf(type, "BROADCASTING"));
                return;
            }
        }
        throw new IllegalStateException("no setMessageModel");
    }

    static String sql92(Ctx ctx) throws Exception {
        String topic = ctx.topic("t");
        ctx.createTopic(topic, 4);
        DefaultMQProducer p = ctx.producer(ctx.group("p"));
        DefaultMQPushConsumer c = ctx.pushConsumer(ctx.group("c"));
        c.subscribe(topic, MessageSelector.bySql("a BETWEEN 3 AND 6 AND TAGS IN ('T1') AND (b IS NULL OR b <> 'x')"));
        Received got = new Received();
        c.registerMessageListener((MessageListenerConcurrently) (msgs, context) -> {
            got.addAll(msgs);
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        ctx.start(c);
        Set<String> wanted = new TreeSet<>();
        for (int i = 0; i < 20; i++) {
            String tag = i % 2 == 0 ? "T1" : "T2";
            int a = i % 10;
            Message m = new Message(topic, tag, "k-" + i, bytes("s-" + i));
            m.putUserProperty("a", String.valueOf(a));
            if (i == 14) m.putUserProperty("b", "x");
            p.send(m);
            if (a >= 3 && a <= 6 && tag.equals("T1") && i != 14) wanted.add("s-" + i);
        }
        got.awaitBodies(wanted, 20_000);
        Thread.sleep(800);
        got.checkExactly(wanted);
        return "bySql delivered exactly " + wanted + " of 20";
    }

    static String orderly(Ctx ctx) throws Exception {
        String topic = ctx.topic("t");
        ctx.createTopic(topic, 8);
        DefaultMQProducer p = ctx.producer(ctx.group("p"));
        String group = ctx.group("c");
        // Arrival log over both consumers: "order:step", in the order the listeners saw them.
        List<String> log = new ArrayList<>();
        Map<String, Set<Integer>> queuesOfOrder = new ConcurrentHashMap<>();
        List<DefaultMQPushConsumer> consumers = new ArrayList<>();
        Runnable startOne = () -> {
            try {
                DefaultMQPushConsumer c = ctx.pushConsumer(group);
                c.subscribe(topic, "*");
                c.registerMessageListener((MessageListenerOrderly) (msgs, context) -> {
                    for (MessageExt m : msgs) {
                        synchronized (log) {
                            log.add(body(m));
                        }
                        queuesOfOrder.computeIfAbsent(body(m).split(":")[0], k -> ConcurrentHashMap.newKeySet()).add(m.getQueueId());
                    }
                    return ConsumeOrderlyStatus.SUCCESS;
                });
                consumers.add(ctx.start(c));
            } catch (Exception e) {
                throw new RuntimeException(e);
            }
        };
        startOne.run();
        int orders = 6;
        int steps = 20;
        for (int s = 0; s < steps; s++) {
            if (s == steps / 2) {
                startOne.run(); // a second consumer joins mid-stream: queues move between them
                ctx.progress("second orderly consumer started");
            }
            for (int o = 0; o < orders; o++) {
                SendResult r = p.send(msg(topic, "TagA", "k-" + o, "o" + o + ":" + s), (mqs, m, arg) -> mqs.get((Integer) arg % mqs.size()), o);
                check(r.getMessageQueue().getQueueId() == o % 8, "selector chose queue " + r.getMessageQueue().getQueueId());
            }
            Thread.sleep(20);
        }
        Ctx.await(() -> {
            synchronized (log) {
                return new HashSet<>(log).size() == orders * steps;
            }
        }, 30_000, () -> "all ordered messages: " + new HashSet<>(log).size() + " of " + orders * steps);
        // Per order: every step seen for the first time in ascending order (a redelivery of a step
        // already seen, possible when a queue moves, is allowed; a step before an earlier one is not).
        Map<String, Integer> lastFirstSeen = new HashMap<>();
        Map<String, Set<Integer>> seen = new HashMap<>();
        int redelivered = 0;
        synchronized (log) {
            for (String e : log) {
                String order = e.split(":")[0];
                int step = Integer.parseInt(e.split(":")[1]);
                if (!seen.computeIfAbsent(order, k -> new HashSet<>()).add(step)) {
                    redelivered++;
                    continue;
                }
                int prev = lastFirstSeen.getOrDefault(order, -1);
                check(step == prev + 1, "order " + order + ": step " + step + " arrived after step " + prev);
                lastFirstSeen.put(order, step);
            }
        }
        for (Map.Entry<String, Set<Integer>> e : queuesOfOrder.entrySet()) check(e.getValue().size() == 1, "order " + e.getKey() + " in queues " + e.getValue());
        check(consumers.size() == 2 && !owned(consumers.get(1), topic).isEmpty(), "the second orderly consumer never got a queue");
        return orders + " orders × " + steps + " steps in order per queue across a rebalance (" + redelivered + " redelivered)";
    }

    static String litePullSubscribe(Ctx ctx) throws Exception {
        String topic = ctx.topic("t");
        ctx.createTopic(topic, 4);
        DefaultMQProducer p = ctx.producer(ctx.group("p"));
        Set<String> first = send(p, topic, "TagA", 0, 20);
        String group = ctx.group("c");
        DefaultLitePullConsumer c = ctx.litePull(group);
        c.setAutoCommit(false);
        c.subscribe(topic, "*");
        ctx.start(c);
        Received got = new Received();
        long deadline = System.currentTimeMillis() + 20_000;
        while (!got.bodies().containsAll(first) && System.currentTimeMillis() < deadline) got.addAll(c.poll(500));
        check(got.bodies().containsAll(first), "lite pull (subscribe) got " + got.size() + " of 20");
        c.commitSync();
        Collection<MessageQueue> queues = c.fetchMessageQueues(topic);
        check(committedTotal(c, queues) == 20, "committed() after commitSync: " + committedTotal(c, queues) + " of 20");
        // commitSync only sets the consumer's memory; the offsets reach the broker by the client's
        // periodic persist (every 5 s, ONEWAY) or the ONEWAY update shutdown sends. Wait, with the
        // consumer still running, until the broker holds all 20 (read by fresh members, whose
        // committed() asks the broker), or the next member may legitimately start below them.
        // Waiting after shutdown raced its ONEWAY updates against the closing channel: Apache
        // 4.9.7 kept 5 of 20 once in CI.
        Ctx.await(() -> brokerCommittedTotal(ctx, group, queues) == 20, 20_000,
            () -> "the broker to hold the committed offsets: " + brokerCommittedTotal(ctx, group, queues) + " of 20");
        c.shutdown();
        // A new member of the group resumes after the committed offsets: only new messages.
        Set<String> second = send(p, topic, "TagA", 20, 30);
        DefaultLitePullConsumer c2 = ctx.litePull(group);
        c2.setAutoCommit(false);
        c2.subscribe(topic, "*");
        ctx.start(c2);
        Received got2 = new Received();
        deadline = System.currentTimeMillis() + 20_000;
        while (!got2.bodies().containsAll(second) && System.currentTimeMillis() < deadline) got2.addAll(c2.poll(500));
        got2.addAll(c2.poll(300));
        got2.checkExactly(second);
        return "subscribe + poll got 20; after commitSync a new consumer of the group resumed with exactly the 10 new ones";
    }

    /**
     * The sum of the offsets the broker holds for `group` on `queues`, read by a fresh member of the
     * group: its memory is empty, so committed() asks the broker (c.committed() answers from memory).
     */
    static long brokerCommittedTotal(Ctx ctx, String group, Collection<MessageQueue> queues) {
        DefaultLitePullConsumer probe = ctx.litePull(group);
        try {
            probe.start();
            return committedTotal(probe, queues);
        } catch (Exception e) {
            return -1;
        } finally {
            probe.shutdown();
        }
    }

    /** The sum of the offsets `c` reports for `queues` (-1 counted as 0). */
    static long committedTotal(DefaultLitePullConsumer c, Collection<MessageQueue> queues) {
        long sum = 0;
        for (MessageQueue q : queues) {
            try {
                sum += Math.max(0, c.committed(q));
            } catch (Exception e) {
                return -1;
            }
        }
        return sum;
    }

    static String litePullAssign(Ctx ctx) throws Exception {
        String topic = ctx.topic("t");
        ctx.createTopic(topic, 2);
        DefaultMQProducer p = ctx.producer(ctx.group("p"));
        MessageQueue q0 = null;
        List<String> inQ0 = new ArrayList<>();
        for (int i = 0; i < 20; i++) {
            String b = "m-" + i;
            SendResult r = p.send(msg(topic, "TagA", "k-" + b, b), (mqs, m, arg) -> mqs.get(0), null);
            q0 = r.getMessageQueue();
            inQ0.add(b);
        }
        DefaultLitePullConsumer c = ctx.litePull(ctx.group("c"));
        c.setAutoCommit(false);
        ctx.start(c);
        Collection<MessageQueue> mqs = c.fetchMessageQueues(topic);
        check(mqs.size() == 2, "fetchMessageQueues: " + mqs);
        MessageQueue target = null;
        for (MessageQueue q : mqs) if (q.getQueueId() == q0.getQueueId()) target = q;
        c.assign(List.of(target));
        int[] reseeks = {0};
        List<MessageExt> got = readAfterSeek(c, target, 5, 15, reseeks);
        check(got.size() == 15, "after seek(5) expected 15 messages, got " + got.size());
        for (int i = 0; i < 15; i++) {
            check(got.get(i).getQueueOffset() == 5 + i && body(got.get(i)).equals(inQ0.get(5 + i)), "after seek(5): position " + i + " is offset " + got.get(i).getQueueOffset());
        }
        List<MessageExt> tail = readAfterSeek(c, target, 18, 2, reseeks);
        check(tail.size() == 2 && tail.get(0).getQueueOffset() == 18, "after seek(18): " + tail.size() + " messages");
        c.commitSync();
        MessageQueue q = target;
        Ctx.await(() -> committedTotal(c, List.of(q)) == 20, 15_000, () -> "committed offset " + committedTotal(c, List.of(q)) + ", expected 20");
        return "assign + seek(5) read offsets 5..19 in order, seek(18) re-read 18..19, commitSync stored 20"
            + (reseeks[0] > 0 ? " (" + reseeks[0] + " seek(s) repeated after the client's stream stalled)" : "");
    }

    /**
     * seek(`from`), then poll until `count` messages from `from` on have come in order, or 40 s.
     * assign() starts a pull at once, and one in flight before a seek may still hand over what it
     * read: the seek's own stream starts at `from` again, and what came before that restart is
     * dropped. The 5.x client's stream can also stall after such a race (fresh-clone CI over TLS:
     * 10 of 15 read, then nothing for 35 s): when nothing comes for 5 s the seek is repeated,
     * counted in `reseeks`, since what is checked is that the broker serves a seek's offsets.
     */
    static List<MessageExt> readAfterSeek(DefaultLitePullConsumer c, MessageQueue mq, long from, int count, int[] reseeks) throws Exception {
        List<MessageExt> got = new ArrayList<>();
        long deadline = System.currentTimeMillis() + 40_000;
        c.seek(mq, from);
        long lastProgress = System.currentTimeMillis();
        while (got.size() < count && System.currentTimeMillis() < deadline) {
            for (MessageExt m : c.poll(500)) {
                if (m.getQueueOffset() == from) got.clear();
                if (m.getQueueOffset() >= from) {
                    got.add(m);
                    lastProgress = System.currentTimeMillis();
                }
            }
            if (got.size() < count && System.currentTimeMillis() - lastProgress > 5_000) {
                reseeks[0]++;
                got.clear();
                c.seek(mq, from);
                lastProgress = System.currentTimeMillis();
            }
        }
        return got.size() > count ? got.subList(0, count) : got;
    }

    static String retryDlq(Ctx ctx) throws Exception {
        String topic = ctx.topic("t");
        ctx.createTopic(topic, 4);
        String group = ctx.group("c");
        // A consumer looks up its group's retry topic when it starts and then every 30 s; the
        // broker creates that topic at the group's first heartbeat, just after the first look-up
        // (on either broker). Create it first, as a group that has run before would have it.
        ctx.createTopic("%RETRY%" + group, 1);
        DefaultMQPushConsumer c = ctx.pushConsumer(group);
        c.setMaxReconsumeTimes(2);
        c.subscribe(topic, "*");
        Map<String, List<Integer>> attempts = new ConcurrentHashMap<>();
        c.registerMessageListener((MessageListenerConcurrently) (msgs, context) -> {
            for (MessageExt m : msgs) attempts.computeIfAbsent(body(m), k -> new ArrayList<>()).add(m.getReconsumeTimes());
            // Level 1 (1 s) instead of the broker's 3 + reconsumeTimes, to keep the scenario short.
            context.setDelayLevelWhenNextConsume(1);
            String b = body(msgs.get(0));
            return b.startsWith("fail") ? ConsumeConcurrentlyStatus.RECONSUME_LATER : ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        ctx.start(c);
        DefaultMQProducer p = ctx.producer(ctx.group("p"));
        p.send(msg(topic, "TagA", "k-fail-1", "fail-1"));
        p.send(msg(topic, "TagA", "k-ok-1", "ok-1"));
        Ctx.await(() -> attempts.getOrDefault("fail-1", List.of()).size() >= 3, 30_000, () -> "3 attempts of fail-1: " + attempts);
        String dlq = "%DLQ%" + group;
        Ctx.await(() -> {
            try {
                return p.queryMessage(dlq, "k-fail-1", 8, 0, Long.MAX_VALUE).getMessageList().size() == 1;
            } catch (Exception e) {
                return false;
            }
        }, 20_000, () -> "fail-1 in " + dlq);
        Thread.sleep(1500);
        List<Integer> seen = attempts.get("fail-1");
        check(seen.equals(List.of(0, 1, 2)), "fail-1 reconsumeTimes seen " + seen + ", expected [0, 1, 2] then the DLQ");
        check(attempts.get("ok-1").equals(List.of(0)), "ok-1 attempts " + attempts.get("ok-1"));
        MessageExt inDlq = p.queryMessage(dlq, "k-fail-1", 8, 0, Long.MAX_VALUE).getMessageList().get(0);
        check(body(inDlq).equals("fail-1"), "DLQ body " + body(inDlq));
        check(topic.equals(inDlq.getProperty("RETRY_TOPIC")), "DLQ message's RETRY_TOPIC " + inDlq.getProperty("RETRY_TOPIC"));
        return "RECONSUME_LATER: attempts with reconsumeTimes [0, 1, 2] through %RETRY%, then in " + dlq + " (found by key)";
    }

    static String delayLevel(Ctx ctx) throws Exception {
        String topic = ctx.topic("t");
        ctx.createTopic(topic, 4);
        Received got = new Received();
        Map<String, Long> arrival = new ConcurrentHashMap<>();
        startTimedConsumer(ctx, topic, arrival, got);
        DefaultMQProducer p = ctx.producer(ctx.group("p"));
        // The 5.x push consumer's first pulls start about 1.5 s after start() (on either broker):
        // wait until one message has gone through, so the timings below measure the delay levels.
        p.send(msg(topic, "TagA", "k-warmup", "warmup"));
        got.awaitBodies(Set.of("warmup"), 20_000);
        long t0 = System.currentTimeMillis();
        Message d1 = msg(topic, "TagA", "k-d1", "d1");
        d1.setDelayTimeLevel(1);
        Message d2 = msg(topic, "TagA", "k-d2", "d2");
        d2.setDelayTimeLevel(2);
        p.send(d2);
        p.send(d1);
        p.send(msg(topic, "TagA", "k-now", "now"));
        got.awaitBodies(Set.of("d1", "d2", "now"), 20_000);
        long a1 = arrival.get("d1") - t0;
        long a2 = arrival.get("d2") - t0;
        long an = arrival.get("now") - t0;
        // Lower bounds are what the levels promise (less the broker's 100 ms scan); upper bounds leave room for a slow first pull.
        check(an < a1, "the undelayed message arrived after the level-1 one");
        check(a1 >= 900 && a1 < 5000, "level 1 (1 s) arrived after " + a1 + " ms");
        check(a2 >= 4900 && a2 < 10000, "level 2 (5 s) arrived after " + a2 + " ms");
        for (MessageExt m : got.all()) check(m.getTopic().equals(topic), "delayed message delivered with topic " + m.getTopic());
        return "undelayed " + an + " ms, level 1 after " + a1 + " ms, level 2 after " + a2 + " ms";
    }

    /**
     * A brand-new group's first retry (issue #27): unlike retry-dlq, nothing makes %RETRY%<group>
     * beforehand, so the consumer's first rebalances see the retry topic only if the broker made it
     * routable before answering the heartbeat that created it. The first attempt fails with
     * RECONSUME_LATER at the broker's own level (3 + reconsumeTimes: level 3, 10 s); the second
     * must come about those 10 s later, not at the consumer's next 20 s rebalance (~19 s).
     * Reported as [retry_ms=…]; java.test.ts compares the two brokers' figures.
     */
    static String retryFirstRun(Ctx ctx) throws Exception {
        String topic = ctx.topic("t");
        ctx.createTopic(topic, 4);
        DefaultMQPushConsumer c = ctx.pushConsumer(ctx.group("c"));
        c.subscribe(topic, "*");
        List<Long> attempts = new CopyOnWriteArrayList<>();
        c.registerMessageListener((MessageListenerConcurrently) (msgs, context) -> {
            boolean first = false;
            for (MessageExt m : msgs) {
                if (!body(m).equals("fail-once")) continue;
                attempts.add(System.currentTimeMillis());
                first = attempts.size() == 1;
            }
            return first ? ConsumeConcurrentlyStatus.RECONSUME_LATER : ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        ctx.start(c);
        DefaultMQProducer p = ctx.producer(ctx.group("p"));
        p.send(msg(topic, "TagA", "k-fail-once", "fail-once"));
        Ctx.await(() -> attempts.size() >= 2, 45_000, () -> "a second attempt of fail-once (attempts: " + attempts.size() + ")");
        long gap = attempts.get(1) - attempts.get(0);
        // Apache RocketMQ loses the client's rebalance race too (20 s in one fresh-clone CI run with
        // 4.9.8, often with 5.3.3): here only that the retry comes; java.test.ts holds RocketBun to
        // Apache's figure and to 15 s.
        check(gap >= 9_000 && gap < 25_000, "the retry came " + gap + " ms after the first attempt; level 3 is 10 s");
        return "[retry_ms=" + gap + "] a new group's RECONSUME_LATER came back after " + gap + " ms (level 3: 10 s)";
    }

    /**
     * Orderly hand-over (issue #27): consumer A holds every queue and consumes; B joins the group
     * while messages go to every queue every 50 ms. The figure is the time from B's start() to its
     * first message (its queues locked on the broker), reported as [handover_ms=…]; java.test.ts
     * compares the two brokers'. Here only that B gets queues at all: a 4.x client refused a lock
     * asks again at its next 20 s rebalance, and on Apache RocketMQ that race is lost often.
     */
    static String orderlyHandover(Ctx ctx) throws Exception {
        String topic = ctx.topic("t");
        ctx.createTopic(topic, 4);
        String group = ctx.group("c");
        DefaultMQProducer p = ctx.producer(ctx.group("p"));
        Received gotA = new Received();
        DefaultMQPushConsumer a = ctx.pushConsumer(group);
        a.subscribe(topic, "*");
        a.registerMessageListener((MessageListenerOrderly) (msgs, context) -> {
            gotA.addAll(msgs);
            return ConsumeOrderlyStatus.SUCCESS;
        });
        ctx.start(a);
        Set<String> warm = new HashSet<>();
        for (int q = 0; q < 4; q++) warm.add(sendTo(p, topic, q, "warm-" + q));
        gotA.awaitBodies(warm, 20_000);
        AtomicLong firstOfB = new AtomicLong();
        DefaultMQPushConsumer b = ctx.pushConsumer(group);
        b.subscribe(topic, "*");
        b.registerMessageListener((MessageListenerOrderly) (msgs, context) -> {
            firstOfB.compareAndSet(0, System.currentTimeMillis());
            return ConsumeOrderlyStatus.SUCCESS;
        });
        AtomicBoolean sending = new AtomicBoolean(true);
        Thread sender = new Thread(() -> {
            for (int i = 0; sending.get(); i++) {
                try {
                    for (int q = 0; q < 4; q++) sendTo(p, topic, q, "m-" + i + "-" + q);
                    Thread.sleep(50);
                } catch (Exception e) {
                    return;
                }
            }
        }, "orderly-handover-sender");
        sender.setDaemon(true);
        sender.start();
        long t0 = System.currentTimeMillis();
        try {
            ctx.start(b);
            ctx.progress("second orderly consumer started");
            Ctx.await(() -> firstOfB.get() != 0, 45_000, () -> "the second orderly consumer to consume a message");
        } finally {
            sending.set(false);
            sender.join(5_000);
        }
        long handover = firstOfB.get() - t0;
        return "[handover_ms=" + handover + "] the second orderly consumer consumed its first message " + handover + " ms after its start()";
    }

    /** A push consumer of a new group on `topic` from its first offset, noting each body's arrival time. */
    static void startTimedConsumer(Ctx ctx, String topic, Map<String, Long> arrival, Received got) throws Exception {
        DefaultMQPushConsumer c = ctx.pushConsumer(ctx.group("c"));
        c.subscribe(topic, "*");
        c.registerMessageListener((MessageListenerConcurrently) (msgs, context) -> {
            for (MessageExt m : msgs) arrival.put(body(m), System.currentTimeMillis());
            got.addAll(msgs);
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        ctx.start(c);
    }

    /** Sends `body` to queue `queueId` of `topic`; returns the body. */
    static String sendTo(DefaultMQProducer p, String topic, int queueId, String body) throws Exception {
        p.send(msg(topic, "TagA", "k-" + body, body), (mqs, m, arg) -> mqs.get((Integer) arg % mqs.size()), queueId);
        return body;
    }
}
