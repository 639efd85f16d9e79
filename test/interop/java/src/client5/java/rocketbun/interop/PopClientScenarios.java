package rocketbun.interop;

import static rocketbun.interop.Ctx.body;
import static rocketbun.interop.Ctx.check;
import static rocketbun.interop.SendScenarios.msg;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import java.util.stream.Collectors;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.MessageSelector;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.ConsumeOrderlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.consumer.listener.MessageListenerOrderly;
import org.apache.rocketmq.client.impl.MQClientAPIImpl;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.common.MixAll;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageConst;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;
import org.apache.rocketmq.common.message.MessageRequestMode;
import org.apache.rocketmq.remoting.protocol.body.ClusterInfo;
import org.apache.rocketmq.remoting.protocol.route.BrokerData;
import org.apache.rocketmq.remoting.protocol.route.TopicRouteData;

/**
 * POP consumption with the 5.3.3 remoting client (compiled for client-5 only; PopScenarios lists
 * the names for both builds). A DefaultMQPushConsumer with setClientRebalance(false) asks the
 * broker for its queues (QUERY_ASSIGNMENT); for a (topic, group) set to POP with
 * SET_MESSAGE_REQUEST_MODE (sent here through the client's own MQClientAPIImpl, the request
 * `mqadmin setConsumeMode` sends; pop-mqadmin runs mqadmin 5.3.3 itself) the broker assigns
 * (topic, broker, queueId -1) in mode POP, and the client pops (POP_MESSAGE), acks each consumed
 * message (ACK_MESSAGE) and, on RECONSUME_LATER, sets its invisible time to the 5.x client's
 * popDelayLevel (CHANGE_MESSAGE_INVISIBLETIME, 10 s the first time). Without the mode the broker
 * answers PULL assignments and the client pulls, as before.
 *
 * Timings allow for what Apache RocketMQ 5.3.3 does: a message not acked within its invisible time
 * comes back through the broker's revive service as a copy in %RETRY%{group}_{topic}
 * (reconsumeTimes + 1, the same msgId), a few seconds after that time; its arrival there does not
 * wake a parked pop, so the consumer sees it at its next pop, up to the client's 15 s poll later.
 */
final class PopClientScenarios {
    private PopClientScenarios() {}

    /** The 5.3.3 client's smallest popInvisibleTime (start() refuses less): un-acked messages come back soonest. */
    static final long MIN_INVISIBLE_MS = 5_000;
    /** A message not acked: its invisible time, the revive service's few seconds, and a pop parked for 15 s meanwhile. */
    static final long COME_BACK_MS = 40_000;

    static void register(Map<String, Scenario> m) {
        m.put("pop-basic", PopClientScenarios::basic);
        m.put("pop-redeliver", PopClientScenarios::redeliver);
        m.put("pop-no-ack", PopClientScenarios::noAck);
        m.put("pop-filter", PopClientScenarios::filter);
        m.put("pop-share", PopClientScenarios::share);
        m.put("pop-mqadmin", PopClientScenarios::mqadmin);
        m.put("pop-orderly", PopClientScenarios::orderly);
        m.put("pop-switch", PopClientScenarios::switchToPull);
    }

    /** One delivery to a listener, as the consumer saw it. */
    record Delivery(String consumer, String body, String msgId, int reconsumeTimes, boolean popped, long at) {}

    /** Every delivery of a scenario, in arrival order (thread-safe). */
    static final class Deliveries {
        private final List<Delivery> all = new ArrayList<>();

        synchronized void add(Delivery d) {
            all.add(d);
        }

        synchronized List<Delivery> of(String body) {
            return all.stream().filter(d -> d.body.equals(body)).collect(Collectors.toList());
        }

        synchronized List<Delivery> all() {
            return new ArrayList<>(all);
        }

        synchronized Set<String> bodies() {
            return all.stream().map(Delivery::body).collect(Collectors.toCollection(TreeSet::new));
        }

        void awaitBodies(Set<String> expected, long timeoutMs) throws InterruptedException {
            Ctx.await(() -> bodies().containsAll(expected), timeoutMs,
                () -> "deliveries of " + Received.first(Received.minus(expected, bodies())) + " (" + all().size() + " so far)");
        }

        /** Each of `expected` delivered exactly once, and nothing else. */
        void checkExactlyOnce(Set<String> expected) {
            Set<String> got = bodies();
            check(got.equals(expected), "delivered set differs: missing " + Received.first(Received.minus(expected, got)) + ", unexpected "
                + Received.first(Received.minus(got, expected)));
            Map<String, Integer> twice = new TreeMap<>();
            for (Delivery d : all()) twice.merge(d.body, 1, Integer::sum);
            twice.values().removeIf(n -> n == 1);
            check(twice.isEmpty(), "delivered more than once: " + twice);
        }
    }

    /** A listener that logs every message as `consumer` and answers RECONSUME_LATER for those `later` picks (one message per call). */
    static MessageListenerConcurrently logging(Deliveries log, String consumer, Predicate<MessageExt> later) {
        return (msgs, context) -> {
            boolean fail = false;
            for (MessageExt m : msgs) {
                log.add(new Delivery(consumer, body(m), m.getMsgId(), m.getReconsumeTimes(), m.getProperty(MessageConst.PROPERTY_POP_CK) != null,
                    System.currentTimeMillis()));
                fail |= later.test(m);
            }
            return fail ? ConsumeConcurrentlyStatus.RECONSUME_LATER : ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        };
    }

    static MQClientAPIImpl api(Ctx ctx) throws Exception {
        return ctx.admin().getDefaultMQProducerImpl().getMqClientFactory().getMQClientAPIImpl();
    }

    /** The master address of every broker in `topic`'s route. */
    static List<String> masters(Ctx ctx, String topic) throws Exception {
        TopicRouteData route = api(ctx).getTopicRouteInfoFromNameServer(topic, 3000);
        List<String> out = new ArrayList<>();
        for (BrokerData b : route.getBrokerDatas()) {
            String addr = b.getBrokerAddrs().get(MixAll.MASTER_ID);
            if (addr != null) out.add(addr);
        }
        check(!out.isEmpty(), "no master in the route of " + topic);
        return out;
    }

    /** SET_MESSAGE_REQUEST_MODE (401) POP for (topic, group) on every master of topic's route, as `mqadmin setConsumeMode -c` does. */
    static void setPopMode(Ctx ctx, String topic, String group) throws Exception {
        for (String addr : masters(ctx, topic)) api(ctx).setMessageRequestMode(addr, topic, group, MessageRequestMode.POP, 0, 5000);
    }

    /** A push consumer with client rebalance off (its queues come from the broker), not started. */
    static DefaultMQPushConsumer popConsumer(Ctx ctx, String group, long invisibleMs) {
        DefaultMQPushConsumer c = ctx.pushConsumer(group);
        c.setClientRebalance(false);
        c.setPopInvisibleTime(invisibleMs);
        return c;
    }

    /**
     * Waits until `c`'s rebalance holds a POP assignment of `topic` from the broker (queueId -1: the
     * broker picks the queue at each pop) and no PULL one; returns it.
     */
    static MessageQueue awaitPopAssignment(DefaultMQPushConsumer c, String topic) throws InterruptedException {
        Ctx.await(() -> popQueues(c, topic).size() == 1, 20_000,
            () -> "a POP assignment of " + topic + " (QUERY_ASSIGNMENT); POP " + popQueues(c, topic) + ", PULL " + ConsumeScenarios.owned(c, topic));
        MessageQueue q = popQueues(c, topic).get(0);
        check(q.getQueueId() == -1, "POP assignment " + q + ": expected queueId -1 (all queues of the broker)");
        check(ConsumeScenarios.owned(c, topic).isEmpty(), "PULL queues of " + topic + " beside the POP assignment: " + ConsumeScenarios.owned(c, topic));
        return q;
    }

    static List<MessageQueue> popQueues(DefaultMQPushConsumer c, String topic) {
        return c.getDefaultMQPushConsumerImpl().getRebalanceImpl().getPopProcessQueueTable().keySet().stream()
            .filter(q -> q.getTopic().equals(topic)).collect(Collectors.toList());
    }

    /**
     * Nothing acked comes back, nothing filtered out arrives late: waits `quietMs` (past the
     * invisible time and the revive service's lag), then sends a tail message, which wakes the
     * consumer's parked pop; that pop reads the POP retry topic too (the tail alone does not fill a
     * batch), where an un-acked message would be by then. Returns the tail's body.
     */
    static String sendTailAfter(DefaultMQProducer p, String topic, String tag, Deliveries log, long quietMs) throws Exception {
        Thread.sleep(quietMs);
        String tail = "tail";
        Message m = msg(topic, tag, "k-tail", tail);
        m.putUserProperty("n", "100");
        p.send(m);
        log.awaitBodies(Set.of(tail), 20_000);
        Thread.sleep(1500);
        return tail;
    }

    static Set<String> plus(Set<String> s, String e) {
        Set<String> r = new TreeSet<>(s);
        r.add(e);
        return r;
    }

    static void checkAllPopped(Deliveries log) {
        for (Delivery d : log.all()) check(d.popped, d.body + " was delivered without a POP_CK property: pulled, not popped");
    }

    /** N messages over 4 queues, each delivered once with a POP_CK, acked: none comes back after the invisible time. */
    static String basic(Ctx ctx) throws Exception {
        String topic = ctx.topic("t");
        String group = ctx.group("c");
        ctx.createTopic(topic, 4);
        setPopMode(ctx, topic, group);
        Deliveries log = new Deliveries();
        DefaultMQPushConsumer c = popConsumer(ctx, group, MIN_INVISIBLE_MS);
        c.subscribe(topic, "*");
        c.registerMessageListener(logging(log, "c", m -> false));
        ctx.start(c);
        MessageQueue assigned = awaitPopAssignment(c, topic);
        DefaultMQProducer p = ctx.producer(ctx.group("p"));
        long t0 = System.currentTimeMillis();
        Set<String> sent = ConsumeScenarios.send(p, topic, "TagA", 0, 20);
        log.awaitBodies(sent, 20_000);
        long popMs = log.all().stream().mapToLong(Delivery::at).max().getAsLong() - t0;
        ctx.progress("waiting past the invisible time for anything un-acked");
        String tail = sendTailAfter(p, topic, "TagA", log, MIN_INVISIBLE_MS + 7_000);
        log.checkExactlyOnce(plus(sent, tail));
        checkAllPopped(log);
        for (Delivery d : log.all()) check(d.reconsumeTimes == 0, d.body + " delivered with reconsumeTimes " + d.reconsumeTimes);
        return "[pop_ms=" + popMs + "] assigned " + assigned + " in mode POP; 20 messages over 4 queues popped (POP_CK) within " + popMs
            + " ms of the first send, each once, acked: none back " + (MIN_INVISIBLE_MS + 7_000) / 1000 + " s later (invisible time 5 s)";
    }

    /** RECONSUME_LATER once for two of ten: those come back after popDelayLevel[0] = 10 s with reconsumeTimes 1; the rest once. */
    static String redeliver(Ctx ctx) throws Exception {
        String topic = ctx.topic("t");
        String group = ctx.group("c");
        ctx.createTopic(topic, 2);
        setPopMode(ctx, topic, group);
        Set<String> failOnce = Set.of("m-3", "m-7");
        Deliveries log = new Deliveries();
        DefaultMQPushConsumer c = popConsumer(ctx, group, MIN_INVISIBLE_MS);
        c.subscribe(topic, "*");
        c.registerMessageListener(logging(log, "c", m -> failOnce.contains(body(m)) && m.getReconsumeTimes() == 0));
        ctx.start(c);
        awaitPopAssignment(c, topic);
        DefaultMQProducer p = ctx.producer(ctx.group("p"));
        Set<String> sent = ConsumeScenarios.send(p, topic, "TagA", 0, 10);
        log.awaitBodies(sent, 20_000);
        ctx.progress("waiting for the redelivery of " + failOnce);
        Ctx.await(() -> failOnce.stream().allMatch(b -> log.of(b).size() >= 2), COME_BACK_MS,
            () -> "a second delivery of " + failOnce + ": " + failOnce.stream().map(b -> b + "×" + log.of(b).size()).collect(Collectors.joining(", ")));
        long redeliverMs = 0;
        for (String b : failOnce) {
            List<Delivery> ds = log.of(b);
            Delivery first = ds.get(0), second = ds.get(1);
            long gap = second.at - first.at;
            redeliverMs = Math.max(redeliverMs, gap);
            check(first.reconsumeTimes == 0 && second.reconsumeTimes == 1, b + " reconsumeTimes " + first.reconsumeTimes + " then " + second.reconsumeTimes);
            check(second.msgId.equals(first.msgId), b + " came back with msgId " + second.msgId + ", first " + first.msgId);
            check(gap >= 9_000, b + " came back after " + gap + " ms: before popDelayLevel[0] (10 s)");
        }
        ctx.progress("waiting past the invisible time of the redelivered ones");
        String tail = sendTailAfter(p, topic, "TagA", log, MIN_INVISIBLE_MS + 7_000);
        Set<String> expected = plus(sent, tail);
        check(log.bodies().equals(expected), "delivered " + log.bodies());
        for (String b : expected) {
            int n = log.of(b).size();
            check(n == (failOnce.contains(b) ? 2 : 1), b + " delivered " + n + " times");
        }
        checkAllPopped(log);
        return "[redeliver_ms=" + redeliverMs + "] RECONSUME_LATER for " + failOnce + ": back after at most " + redeliverMs
            + " ms with reconsumeTimes 1 and the same msgId, then acked; the other 8 once";
    }

    /**
     * A consumer killed mid-batch: its listener holds 5 popped messages until it is shut down, so
     * none is acked; a second consumer of the group gets them again after the invisible time (5 s),
     * from the POP retry topic, with reconsumeTimes 1 and the same msgIds.
     */
    static String noAck(Ctx ctx) throws Exception {
        String topic = ctx.topic("t");
        String group = ctx.group("c");
        ctx.createTopic(topic, 2);
        setPopMode(ctx, topic, group);
        Deliveries log = new Deliveries();
        CountDownLatch release = new CountDownLatch(1);
        DefaultMQPushConsumer a = popConsumer(ctx, group, MIN_INVISIBLE_MS);
        a.subscribe(topic, "*");
        MessageListenerConcurrently logA = logging(log, "a", m -> false);
        a.registerMessageListener((MessageListenerConcurrently) (msgs, context) -> {
            logA.consumeMessage(msgs, context);
            holdUntil(release, 50_000);
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        try {
            return killedMidBatch(ctx, topic, group, a, log);
        } finally {
            release.countDown();
        }
    }

    /** Parks the calling listener thread until `release` or `maxMs`, through interrupts (a killed consumer acks nothing). */
    static void holdUntil(CountDownLatch release, long maxMs) {
        long until = System.currentTimeMillis() + maxMs;
        while (release.getCount() > 0 && System.currentTimeMillis() < until) {
            try {
                release.await(until - System.currentTimeMillis(), TimeUnit.MILLISECONDS);
            } catch (InterruptedException e) {
                // ConsumeMessagePopConcurrentlyService.shutdown interrupts its threads: keep holding.
            }
        }
    }

    static String killedMidBatch(Ctx ctx, String topic, String group, DefaultMQPushConsumer a, Deliveries log) throws Exception {
        ctx.start(a);
        awaitPopAssignment(a, topic);
        DefaultMQProducer p = ctx.producer(ctx.group("p"));
        Set<String> sent = ConsumeScenarios.send(p, topic, "TagA", 0, 5);
        log.awaitBodies(sent, 20_000);
        long popped = log.all().stream().mapToLong(Delivery::at).max().getAsLong();
        // The listener never returns while the client runs (shutdown's interrupt does not free it either): nothing is acked.
        a.shutdown();
        long down = System.currentTimeMillis();
        DefaultMQPushConsumer b = popConsumer(ctx, group, MIN_INVISIBLE_MS);
        b.subscribe(topic, "*");
        b.registerMessageListener(logging(log, "b", m -> false));
        ctx.start(b);
        ctx.progress("waiting for the second consumer to get the un-acked messages");
        Ctx.await(() -> log.all().stream().filter(d -> d.consumer.equals("b")).count() >= sent.size(), COME_BACK_MS,
            () -> "the second consumer to get " + sent + "; it has " + log.all().stream().filter(d -> d.consumer.equals("b")).map(Delivery::body).toList());
        List<Delivery> again = log.all().stream().filter(d -> d.consumer.equals("b")).toList();
        long reviveMs = again.stream().mapToLong(Delivery::at).max().getAsLong() - popped;
        Map<String, String> firstId = new HashMap<>();
        for (Delivery d : log.all()) if (d.consumer.equals("a")) firstId.put(d.body, d.msgId);
        for (Delivery d : again) {
            check(d.reconsumeTimes >= 1, d.body + " came back with reconsumeTimes " + d.reconsumeTimes);
            check(d.msgId.equals(firstId.get(d.body)), d.body + " came back with msgId " + d.msgId + ", first " + firstId.get(d.body));
            check(d.at - popped >= MIN_INVISIBLE_MS - 500, d.body + " came back " + (d.at - popped) + " ms after its pop: inside its invisible time");
        }
        check(again.stream().map(Delivery::body).collect(Collectors.toCollection(TreeSet::new)).equals(sent),
            "the second consumer got " + again.stream().map(Delivery::body).toList() + ", expected " + sent);
        check(log.all().stream().filter(d -> d.consumer.equals("a")).count() == sent.size(), "the first consumer got " + log.all());
        checkAllPopped(log);
        Set<String> onceMore = again.stream().map(Delivery::body).collect(Collectors.toCollection(TreeSet::new));
        check(onceMore.size() == again.size(), "the second consumer got duplicates: " + again.stream().map(Delivery::body).toList());
        return "[revive_ms=" + reviveMs + "] 5 messages popped by a consumer shut down " + (down - popped) + " ms later without acking; a second consumer got all 5 "
            + reviveMs + " ms after the pop, reconsumeTimes ≥ 1, same msgIds";
    }

    /** Tag and SQL92 subscriptions of two POP groups on one topic: each gets exactly its matches, nothing else later. */
    static String filter(Ctx ctx) throws Exception {
        String topic = ctx.topic("t");
        String tagGroup = ctx.group("tag");
        String sqlGroup = ctx.group("sql");
        ctx.createTopic(topic, 2);
        setPopMode(ctx, topic, tagGroup);
        setPopMode(ctx, topic, sqlGroup);
        Deliveries byTag = new Deliveries();
        Deliveries bySql = new Deliveries();
        DefaultMQPushConsumer t = popConsumer(ctx, tagGroup, MIN_INVISIBLE_MS);
        t.subscribe(topic, "TagA || TagB");
        t.registerMessageListener(logging(byTag, "tag", m -> false));
        DefaultMQPushConsumer s = popConsumer(ctx, sqlGroup, MIN_INVISIBLE_MS);
        s.subscribe(topic, MessageSelector.bySql("n BETWEEN 3 AND 8 AND TAGS <> 'TagB'"));
        s.registerMessageListener(logging(bySql, "sql", m -> false));
        ctx.start(t);
        ctx.start(s);
        awaitPopAssignment(t, topic);
        awaitPopAssignment(s, topic);
        DefaultMQProducer p = ctx.producer(ctx.group("p"));
        Set<String> tagWant = new TreeSet<>();
        Set<String> sqlWant = new TreeSet<>();
        String[] tags = {"TagA", "TagB", "TagC"};
        for (int i = 0; i < 12; i++) {
            String tag = tags[i % 3];
            String b = "m-" + i;
            Message m = msg(topic, tag, "k-" + b, b);
            m.putUserProperty("n", String.valueOf(i));
            p.send(m);
            if (!tag.equals("TagC")) tagWant.add(b);
            if (i >= 3 && i <= 8 && !tag.equals("TagB")) sqlWant.add(b);
        }
        byTag.awaitBodies(tagWant, 20_000);
        bySql.awaitBodies(sqlWant, 20_000);
        // The tail (TagA, n=100) matches the tag group only; the SQL group sees no tail: a quiet wait instead.
        String tail = sendTailAfter(p, topic, "TagA", byTag, MIN_INVISIBLE_MS + 7_000);
        byTag.checkExactlyOnce(plus(tagWant, tail));
        bySql.checkExactlyOnce(sqlWant);
        checkAllPopped(byTag);
        checkAllPopped(bySql);
        return "TagA || TagB: " + tagWant.size() + " of 12 (TagC never); SQL92 n BETWEEN 3 AND 8 AND TAGS <> 'TagB': " + sqlWant
            + "; each once, nothing more after the invisible time";
    }

    /** Two consumers of one group on a one-queue topic: both are assigned the queue (POP shares it); 40 messages once across both. */
    static String share(Ctx ctx) throws Exception {
        String topic = ctx.topic("t");
        String group = ctx.group("c");
        ctx.createTopic(topic, 1);
        setPopMode(ctx, topic, group);
        Deliveries log = new Deliveries();
        List<DefaultMQPushConsumer> cs = new ArrayList<>();
        for (String name : List.of("a", "b")) {
            DefaultMQPushConsumer c = popConsumer(ctx, group, MIN_INVISIBLE_MS);
            c.subscribe(topic, "*");
            c.registerMessageListener(logging(log, name, m -> false));
            ctx.start(c);
            cs.add(c);
        }
        for (DefaultMQPushConsumer c : cs) awaitPopAssignment(c, topic);
        DefaultMQProducer p = ctx.producer(ctx.group("p"));
        Set<String> sent = new TreeSet<>();
        for (int burst = 0; burst < 4; burst++) {
            sent.addAll(ConsumeScenarios.send(p, topic, "TagA", burst * 10, burst * 10 + 10));
            Thread.sleep(300);
        }
        log.awaitBodies(sent, 20_000);
        String tail = sendTailAfter(p, topic, "TagA", log, MIN_INVISIBLE_MS + 7_000);
        log.checkExactlyOnce(plus(sent, tail));
        checkAllPopped(log);
        long toA = log.all().stream().filter(d -> d.consumer.equals("a")).count();
        return "both consumers assigned the one queue in mode POP; 40 messages once across both (a " + toA + ", b " + (log.all().size() - toA)
            + ", tail included), acked, none back after the invisible time";
    }

    /**
     * mqadmin 5.3.3 `setConsumeMode` (java.test.ts passes its classpath as rocketbun.mqadmin5.classpath):
     * -c sets POP on each master of the cluster, and a push consumer with client rebalance off then
     * pops; a retry topic is refused with NO_PERMISSION (16) and a topic that does not exist with
     * TOPIC_NOT_EXIST (17), as the broker answers SET_MESSAGE_REQUEST_MODE.
     */
    static String mqadmin(Ctx ctx) throws Exception {
        String cp = System.getProperty("rocketbun.mqadmin5.classpath");
        check(cp != null, "-Drocketbun.mqadmin5.classpath (mqadmin 5.3.3, test/interop/java/mqadmin-5) is not set");
        String topic = ctx.topic("t");
        String group = ctx.group("c");
        ctx.createTopic(topic, 2);
        List<String> masters = masters(ctx, topic);
        String cluster = clusterOf(ctx, masters.get(0));
        String[] out = runMqadmin(ctx, cp, "setConsumeMode", "-c", cluster, "-t", topic, "-g", group, "-m", "POP");
        for (String addr : masters) check(out[0].contains("set consume mode to " + addr + " success."), "setConsumeMode -c printed " + out[0] + out[1]);
        check(out[0].contains("topic[" + topic + "] group[" + group + "] consume mode[POP] popShareQueueNum[0]"), "setConsumeMode -c printed " + out[0] + out[1]);
        String[] retry = runMqadmin(ctx, cp, "setConsumeMode", "-b", masters.get(0), "-t", MixAll.RETRY_GROUP_TOPIC_PREFIX + group, "-g", group, "-m", "POP");
        check(retry[1].contains("CODE: 16") && retry[1].contains("retry topic is not allowed to set mode"),
            "setConsumeMode on a retry topic: expected CODE: 16, got " + retry[0] + retry[1]);
        String missing = ctx.topic("none");
        String[] none = runMqadmin(ctx, cp, "setConsumeMode", "-b", masters.get(0), "-t", missing, "-g", group, "-m", "POP");
        check(none[1].contains("CODE: 17") && none[1].contains("topic[" + missing + "] not exist"),
            "setConsumeMode on a topic that does not exist: expected CODE: 17, got " + none[0] + none[1]);
        Deliveries log = new Deliveries();
        DefaultMQPushConsumer c = popConsumer(ctx, group, MIN_INVISIBLE_MS);
        c.subscribe(topic, "*");
        c.registerMessageListener(logging(log, "c", m -> false));
        ctx.start(c);
        awaitPopAssignment(c, topic);
        Set<String> sent = ConsumeScenarios.send(ctx.producer(ctx.group("p")), topic, "TagA", 0, 5);
        log.awaitBodies(sent, 20_000);
        Thread.sleep(500);
        log.checkExactlyOnce(sent);
        checkAllPopped(log);
        return "mqadmin setConsumeMode -c " + cluster + " -m POP: the consumer was assigned POP and popped 5 messages once; a retry topic refused (16), a missing topic refused (17)";
    }

    /**
     * An orderly listener never pops: the 5.3.3 client rebalances an orderly consumer itself
     * whatever setClientRebalance says (RebalancePushImpl.clientRebalance), so on a (topic, group)
     * set to POP it still locks its queues (LOCK_BATCH_MQ) and pulls them, in order per queue.
     */
    static String orderly(Ctx ctx) throws Exception {
        String topic = ctx.topic("t");
        String group = ctx.group("c");
        ctx.createTopic(topic, 2);
        setPopMode(ctx, topic, group);
        Deliveries log = new Deliveries();
        Map<Integer, List<String>> perQueue = new TreeMap<>();
        DefaultMQPushConsumer c = popConsumer(ctx, group, MIN_INVISIBLE_MS);
        c.subscribe(topic, "*");
        MessageListenerConcurrently logged = logging(log, "c", m -> false);
        c.registerMessageListener((MessageListenerOrderly) (msgs, context) -> {
            logged.consumeMessage(msgs, null);
            synchronized (perQueue) {
                for (MessageExt m : msgs) perQueue.computeIfAbsent(m.getQueueId(), q -> new ArrayList<>()).add(body(m));
            }
            return ConsumeOrderlyStatus.SUCCESS;
        });
        ctx.start(c);
        Ctx.await(() -> ConsumeScenarios.owned(c, topic).size() == 2, 20_000, () -> "the orderly consumer to hold both queues: " + ConsumeScenarios.owned(c, topic));
        check(popQueues(c, topic).isEmpty(), "an orderly consumer was assigned POP queues " + popQueues(c, topic));
        DefaultMQProducer p = ctx.producer(ctx.group("p"));
        Set<String> sent = new TreeSet<>();
        Map<Integer, List<String>> want = new TreeMap<>();
        for (int i = 0; i < 20; i++) {
            String b = ConsumeScenarios.sendTo(p, topic, i % 2, String.format("m-%02d", i));
            sent.add(b);
            want.computeIfAbsent(i % 2, q -> new ArrayList<>()).add(b);
        }
        log.awaitBodies(sent, 20_000);
        Thread.sleep(500);
        log.checkExactlyOnce(sent);
        for (Delivery d : log.all()) check(!d.popped, d.body + " was popped (POP_CK) by an orderly consumer");
        synchronized (perQueue) {
            check(perQueue.equals(want), "per-queue order " + perQueue + ", sent " + want);
        }
        return "setClientRebalance(false) with an orderly listener on a POP (topic, group): the client held both queues itself and pulled 20 messages in order per queue, none popped";
    }

    /**
     * POP, then PULL for the same (topic, group), set while the consumer runs: its next rebalance
     * (every 20 s) gets PULL assignments, and it pulls from the offset the pops committed, so the
     * popped messages are not delivered again and the later ones arrive once, without POP_CK.
     */
    static String switchToPull(Ctx ctx) throws Exception {
        String topic = ctx.topic("t");
        String group = ctx.group("c");
        ctx.createTopic(topic, 2);
        setPopMode(ctx, topic, group);
        Deliveries log = new Deliveries();
        DefaultMQPushConsumer c = popConsumer(ctx, group, MIN_INVISIBLE_MS);
        c.subscribe(topic, "*");
        c.registerMessageListener(logging(log, "c", m -> false));
        ctx.start(c);
        awaitPopAssignment(c, topic);
        DefaultMQProducer p = ctx.producer(ctx.group("p"));
        Set<String> popped = ConsumeScenarios.send(p, topic, "TagA", 0, 10);
        log.awaitBodies(popped, 20_000);
        long t0 = System.currentTimeMillis();
        for (String addr : masters(ctx, topic)) api(ctx).setMessageRequestMode(addr, topic, group, MessageRequestMode.PULL, 0, 5000);
        ctx.progress("waiting for the consumer's next rebalance to get PULL assignments");
        Ctx.await(() -> ConsumeScenarios.owned(c, topic).size() == 2 && popQueues(c, topic).isEmpty(), 30_000,
            () -> "PULL assignments of both queues after the switch: PULL " + ConsumeScenarios.owned(c, topic) + ", POP " + popQueues(c, topic));
        long switchMs = System.currentTimeMillis() - t0;
        Set<String> pulled = ConsumeScenarios.send(p, topic, "TagA", 10, 20);
        log.awaitBodies(pulled, 20_000);
        Thread.sleep(1000);
        Set<String> all = new TreeSet<>(popped);
        all.addAll(pulled);
        log.checkExactlyOnce(all);
        for (Delivery d : log.all()) {
            check(d.popped == popped.contains(d.body), d.body + (d.popped ? " was popped after the switch to PULL" : " was pulled before the switch"));
        }
        return "10 popped, setConsumeMode PULL: the consumer pulled both queues " + switchMs + " ms later, from where the pops left off: 10 more pulled once, none of the popped again";
    }

    /** The cluster of the broker at `addr` (GET_BROKER_CLUSTER_INFO). */
    static String clusterOf(Ctx ctx, String addr) throws Exception {
        ClusterInfo info = api(ctx).getBrokerClusterInfo(3000);
        for (Map.Entry<String, Set<String>> e : info.getClusterAddrTable().entrySet()) {
            for (String name : e.getValue()) {
                BrokerData b = info.getBrokerAddrTable().get(name);
                if (b != null && b.getBrokerAddrs().containsValue(addr)) return e.getKey();
            }
        }
        throw new Ctx.Failure("no cluster lists " + addr + ": " + info.getClusterAddrTable());
    }

    /** mqadmin 5.3.3 in its own JVM against this run's name server: {stdout, stderr} (it exits 0 even when the command failed). */
    static String[] runMqadmin(Ctx ctx, String cp, String... args) throws Exception {
        File home = Files.createTempDirectory("mqadmin5-").toFile();
        List<String> argv = new ArrayList<>(List.of(System.getProperty("java.home") + "/bin/java", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xmx128m",
            "-Duser.home=" + home, "-Drocketmq.client.logRoot=" + home + "/logs", "-cp", cp, "org.apache.rocketmq.tools.command.MQAdminStartup"));
        argv.addAll(List.of(args));
        argv.addAll(List.of("-n", ctx.namesrv));
        ctx.progress("mqadmin " + String.join(" ", args));
        File outF = new File(home, "out");
        File errF = new File(home, "err");
        Process p = new ProcessBuilder(argv).directory(home).redirectOutput(outF).redirectError(errF).start();
        try {
            check(p.waitFor(30, TimeUnit.SECONDS), "mqadmin " + String.join(" ", args) + " still running after 30 s");
            return new String[] {Files.readString(outF.toPath(), StandardCharsets.UTF_8), Files.readString(errF.toPath(), StandardCharsets.UTF_8)};
        } finally {
            p.destroyForcibly();
            for (File f : List.of(outF, errF)) f.delete();
            deleteTree(home);
        }
    }

    static void deleteTree(File f) {
        File[] kids = f.listFiles();
        if (kids != null) for (File k : kids) deleteTree(k);
        f.delete();
    }
}
