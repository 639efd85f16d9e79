package rocketbun.interop;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.Map;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;
import org.apache.rocketmq.acl.common.AclClientRPCHook;
import org.apache.rocketmq.acl.common.SessionCredentials;
import org.apache.rocketmq.client.consumer.DefaultLitePullConsumer;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.remoting.RPCHook;

/**
 * What a scenario needs: names unique to it, clients that are shut down when it ends, topic
 * creation through the client's own createTopic (UPDATE_AND_CREATE_TOPIC to each master of
 * TBW102's route, as `mqadmin updateTopic` would), waits and checks.
 */
public final class Ctx {
    /** A scenario returning a detail starting with this is reported as not applicable to this client. */
    public static final String NOT_APPLICABLE = "n/a: ";

    public static final class Failure extends RuntimeException {
        Failure(String message) {
            super(message);
        }
    }

    final String namesrv;
    final String prefix;
    private final List<Runnable> closers = Collections.synchronizedList(new ArrayList<>());
    private final AtomicInteger instances = new AtomicInteger();
    private volatile String progress = "";
    private DefaultMQProducer admin;

    Ctx(String namesrv, String prefix) {
        this.namesrv = namesrv;
        this.prefix = prefix;
    }

    public String topic(String suffix) {
        return prefix + "_" + suffix;
    }

    public String group(String suffix) {
        return prefix + "_" + suffix + "_g";
    }

    /** The client version this runner was compiled against: 4 or 5. */
    public static int clientMajor() {
        String v = org.apache.rocketmq.common.MQVersion.getVersionDesc(org.apache.rocketmq.common.MQVersion.CURRENT_VERSION);
        return v.startsWith("V5") ? 5 : 4;
    }

    public void progress(String what) {
        progress = what;
    }

    String progress() {
        return progress;
    }

    private String instance() {
        return prefix + "_" + instances.incrementAndGet();
    }

    public DefaultMQProducer producer(String group) throws Exception {
        DefaultMQProducer p = new DefaultMQProducer(group);
        return started(p);
    }

    /**
     * Plain-ACL credentials from system properties (the ACL runs of java.test.ts set them; see
     * test/harness/acl.ts): -Drocketbun.accessKey/secretKey for the ordinary account,
     * -Drocketbun.adminAccessKey/adminSecretKey for the admin that creates topics. Null when unset.
     */
    public static SessionCredentials credentials(String kind) {
        String ak = System.getProperty(kind.isEmpty() ? "rocketbun.accessKey" : "rocketbun." + kind + "AccessKey");
        String sk = System.getProperty(kind.isEmpty() ? "rocketbun.secretKey" : "rocketbun." + kind + "SecretKey");
        return ak == null || sk == null ? null : new SessionCredentials(ak, sk);
    }

    /** AclClientRPCHook of the credentials (null: no hook, unsigned requests). */
    public static RPCHook hook(SessionCredentials c) {
        return c == null ? null : new AclClientRPCHook(c);
    }

    /** A started producer whose every request is signed with `c` (Java's AclClientRPCHook). */
    public DefaultMQProducer producer(String group, SessionCredentials c) throws Exception {
        return started(new DefaultMQProducer(group, hook(c)));
    }

    /** A push consumer (not started) whose every request is signed with `c`. */
    public DefaultMQPushConsumer pushConsumer(String group, SessionCredentials c) {
        return configure(new DefaultMQPushConsumer(group, hook(c), new org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueAveragely()));
    }

    /** Starts a producer (a TransactionMQProducer too) configured for this scenario; shut down when it ends. */
    public <P extends DefaultMQProducer> P started(P p) throws Exception {
        p.setNamesrvAddr(namesrv);
        p.setInstanceName(instance());
        p.setSendMsgTimeout(5000);
        p.start();
        closers.add(p::shutdown);
        return p;
    }

    /** A push consumer from the first offset, not started (subscribe and register a listener, then {@link #start}). */
    public DefaultMQPushConsumer pushConsumer(String group) {
        return configure(new DefaultMQPushConsumer(group));
    }

    public DefaultMQPushConsumer configure(DefaultMQPushConsumer c) {
        c.setNamesrvAddr(namesrv);
        c.setInstanceName(instance());
        c.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        c.setHeartbeatBrokerInterval(2000);
        c.setPersistConsumerOffsetInterval(1000);
        return c;
    }

    public DefaultMQPushConsumer start(DefaultMQPushConsumer c) throws Exception {
        c.start();
        closers.add(c::shutdown);
        return c;
    }

    public DefaultLitePullConsumer litePull(String group) {
        DefaultLitePullConsumer c = new DefaultLitePullConsumer(group);
        c.setNamesrvAddr(namesrv);
        c.setInstanceName(instance());
        c.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        c.setPollTimeoutMillis(500);
        return c;
    }

    public DefaultLitePullConsumer start(DefaultLitePullConsumer c) throws Exception {
        c.start();
        closers.add(c::shutdown);
        return c;
    }

    /** Creates `topic` with `queues` read and write queues on every master and waits until the name server routes it. */
    public void createTopic(String topic, int queues) throws Exception {
        admin();
        createTopicCall(admin, topic, queues);
        final DefaultMQProducer a = admin;
        await(() -> {
            try {
                return a.fetchPublishMessageQueues(topic).size() == queues;
            } catch (Exception e) {
                return false;
            }
        }, 15_000, () -> "the route of " + topic);
    }

    /** createTopic(key, topic, queues): 5.x added a Map of attributes and dropped the three-argument form. */
    static void createTopicCall(DefaultMQProducer p, String topic, int queues) throws Exception {
        for (java.lang.reflect.Method m : DefaultMQProducer.class.getMethods()) {
            if (!m.getName().equals("createTopic")) continue;
            Class<?>[] t = m.getParameterTypes();
            if (t.length == 3 && t[2] == int.class) {
                invoke(m, p, "TBW102", topic, queues);
                return;
            }
            if (t.length == 4 && t[2] == int.class && t[3] == Map.class) {
                invoke(m, p, "TBW102", topic, queues, new HashMap<String, String>());
                return;
            }
        }
        throw new IllegalStateException("no createTopic(key, topic, queues) on this client");
    }

    /** viewMessage by offset message id: 4.x has viewMessage(offsetMsgId); 5.x only viewMessage(topic, id), which decodes an offset id first. */
    public static MessageExt viewByOffsetId(DefaultMQProducer p, String topic, String offsetMsgId) throws Exception {
        try {
            java.lang.reflect.Method m = DefaultMQProducer.class.getMethod("viewMessage", String.class);
            return (MessageExt) invoke(m, p, offsetMsgId);
        } catch (NoSuchMethodException e) {
            return p.viewMessage(topic, offsetMsgId);
        }
    }

    static Object invoke(java.lang.reflect.Method m, Object target, Object... args) throws Exception {
        try {
            return m.invoke(target, args);
        } catch (java.lang.reflect.InvocationTargetException e) {
            Throwable c = e.getCause();
            if (c instanceof Exception) throw (Exception) c;
            throw e;
        }
    }

    /** The producer that creates topics: signed with the admin credentials when the run has them. */
    public DefaultMQProducer admin() throws Exception {
        if (admin == null) admin = producer(prefix + "_admin", credentials("admin"));
        return admin;
    }

    public static void await(BooleanSupplier cond, long timeoutMs, Supplier<String> what) throws InterruptedException {
        long deadline = System.currentTimeMillis() + timeoutMs;
        while (!cond.getAsBoolean()) {
            if (System.currentTimeMillis() > deadline) throw new Failure("timed out after " + timeoutMs + " ms waiting for " + what.get());
            Thread.sleep(25);
        }
    }

    public static void check(boolean cond, String what) {
        if (!cond) throw new Failure(what);
    }

    public static String body(MessageExt m) {
        return new String(m.getBody(), StandardCharsets.UTF_8);
    }

    public static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    void close() {
        List<Runnable> cs = new ArrayList<>(closers);
        Collections.reverse(cs);
        for (Runnable c : cs) {
            try {
                c.run();
            } catch (Throwable t) {
                // Shutting down a client that failed to start may throw; the scenario's outcome is already decided.
            }
        }
        closers.clear();
    }
}
