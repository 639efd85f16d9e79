package rocketbun.golden;

import com.alibaba.fastjson.JSON;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.rocketmq.acl.common.AclClientRPCHook;
import org.apache.rocketmq.acl.common.SessionCredentials;
import org.apache.rocketmq.acl.plain.PlainAccessResource;
import org.apache.rocketmq.acl.plain.PlainAccessValidator;
import org.apache.rocketmq.acl.plain.RemoteAddressStrategy;
import org.apache.rocketmq.acl.plain.RemoteAddressStrategyFactory;
import org.apache.rocketmq.common.protocol.RequestCode;
import org.apache.rocketmq.common.protocol.header.PullMessageRequestHeader;
import org.apache.rocketmq.common.protocol.header.SendMessageRequestHeader;
import org.apache.rocketmq.common.protocol.header.SendMessageRequestHeaderV2;
import org.apache.rocketmq.common.protocol.heartbeat.ConsumeType;
import org.apache.rocketmq.common.protocol.heartbeat.ConsumerData;
import org.apache.rocketmq.common.protocol.heartbeat.HeartbeatData;
import org.apache.rocketmq.common.protocol.heartbeat.MessageModel;
import org.apache.rocketmq.common.protocol.heartbeat.SubscriptionData;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.remoting.protocol.RemotingCommand;

/**
 * Prints golden vectors (one JSON document on stdout) computed by Apache RocketMQ 4.9.8's own ACL
 * classes: request signatures (AclClientRPCHook), address pattern parsing and matching
 * (RemoteAddressStrategyFactory) and validator verdicts (PlainAccessValidator over a fixed
 * plain_acl.yml). RocketBun's tests replay them; nothing here is RocketBun code.
 */
public final class Golden {
    static final String AK = "RocketMQ";
    static final String SK = "12345678";

    public static void main(String[] args) throws Exception {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("signatures", signatures());
        out.put("addresses", addresses());
        out.put("validator", validator());
        System.out.println(JSON.toJSONString(out, true));
        System.exit(0);
    }

    static SendMessageRequestHeaderV2 sendHeader(String group, String topic, String properties) {
        SendMessageRequestHeader h = new SendMessageRequestHeader();
        h.setProducerGroup(group);
        h.setTopic(topic);
        h.setDefaultTopic("TBW102");
        h.setDefaultTopicQueueNums(4);
        h.setQueueId(1);
        h.setSysFlag(0);
        h.setBornTimestamp(1700000000123L);
        h.setFlag(0);
        h.setProperties(properties);
        h.setReconsumeTimes(0);
        h.setUnitMode(false);
        h.setBatch(false);
        return SendMessageRequestHeaderV2.createSendMessageRequestHeaderV2(h);
    }

    static RemotingCommand pull(String group, String topic) {
        PullMessageRequestHeader h = new PullMessageRequestHeader();
        h.setConsumerGroup(group);
        h.setTopic(topic);
        h.setQueueId(0);
        h.setQueueOffset(42L);
        h.setMaxMsgNums(32);
        h.setSysFlag(2);
        h.setCommitOffset(0L);
        h.setSuspendTimeoutMillis(15000L);
        h.setSubscription("*");
        h.setSubVersion(1L);
        return RemotingCommand.createRequestCommand(RequestCode.PULL_MESSAGE, h);
    }

    static RemotingCommand heartbeat(String group, String topic) {
        HeartbeatData hb = new HeartbeatData();
        hb.setClientID("127.0.0.1@1");
        ConsumerData c = new ConsumerData();
        c.setGroupName(group);
        c.setConsumeType(ConsumeType.CONSUME_PASSIVELY);
        c.setMessageModel(MessageModel.CLUSTERING);
        c.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET);
        SubscriptionData s = new SubscriptionData();
        s.setTopic(topic);
        s.setSubString("*");
        s.setSubVersion(1L);
        c.getSubscriptionDataSet().add(s);
        hb.getConsumerDataSet().add(c);
        RemotingCommand r = RemotingCommand.createRequestCommand(RequestCode.HEART_BEAT, null);
        r.setBody(hb.encode());
        return r;
    }

    static RemotingCommand send(String group, String topic, byte[] body) {
        RemotingCommand r = RemotingCommand.createRequestCommand(RequestCode.SEND_MESSAGE_V2, sendHeader(group, topic, "KEYS\u0001k1\u0002TAGS\u0001tagA\u0002"));
        r.setBody(body);
        return r;
    }

    static Map<String, Object> describe(String name, RemotingCommand r, String ak, String sk, String token) {
        AclClientRPCHook hook = new AclClientRPCHook(token == null ? new SessionCredentials(ak, sk) : new SessionCredentials(ak, sk, token));
        hook.doBeforeRequest("127.0.0.1:10911", r);
        Map<String, Object> v = new LinkedHashMap<>();
        v.put("name", name);
        v.put("code", r.getCode());
        v.put("accessKey", ak);
        v.put("secretKey", sk);
        if (token != null) v.put("securityToken", token);
        v.put("extFields", new TreeMap<>(r.getExtFields()));
        v.put("bodyBase64", r.getBody() == null ? null : Base64.getEncoder().encodeToString(r.getBody()));
        v.put("signature", r.getExtFields().get("Signature"));
        return v;
    }

    static List<Object> signatures() {
        List<Object> out = new ArrayList<>();
        out.add(describe("send V2, ascii body", send("pg", "topicB", "hello".getBytes(StandardCharsets.UTF_8)), AK, SK, null));
        out.add(describe("send V2 with a security token", send("pg", "topicB", "hello".getBytes(StandardCharsets.UTF_8)), AK, SK, "token-1"));
        byte[] bin = new byte[256];
        for (int i = 0; i < 256; i++) bin[i] = (byte) i;
        out.add(describe("send V2, unicode topic, binary body", send("组", "主题é", bin), AK, SK, null));
        out.add(describe("unicode secret, empty body", send("pg", "topicB", new byte[0]), "Schlüssel1", "Geheimnis-ü-密钥", null));
        out.add(describe("pull, no body", pull("groupC", "topicC"), AK, SK, null));
        out.add(describe("heartbeat, no header", heartbeat("groupC", "topicC"), AK, SK, null));
        return out;
    }

    static List<Object> addresses() {
        String[] patterns = {"*", "*.*.*.*", "", "192.168.0.1", "192.168.0.{1,2}", "192.168.1.1-100", "192.168.*.*", "10.*.*.*", "10.*",
            "192.168.1.*", "192.168.0.1,10.0.0.2", "192.168.1.100-1", "300.1.1.1", "1.2.3", "192.168.1-2.*", "::1", "2001:db8::1",
            "2001:db8::{1,2}", "2001:db8::1-ff", "2001:db8::*", "*:*:*:*:*:*:*:*", "192.168.0.-1", "abc"};
        String[] addrs = {"192.168.0.1", "192.168.0.2", "192.168.0.3", "192.168.1.1", "192.168.1.100", "192.168.1.101", "10.1.2.3",
            "10.255.0.1", "11.0.0.1", "10.0.0.2", "192.168.2.5", "::1", "2001:db8::1", "2001:db8::2", "2001:DB8:0:0:0:0:0:FE", "2001:db8::100"};
        RemoteAddressStrategyFactory f = new RemoteAddressStrategyFactory();
        List<Object> out = new ArrayList<>();
        for (String p : patterns) {
            Map<String, Object> v = new LinkedHashMap<>();
            v.put("pattern", p);
            RemoteAddressStrategy s;
            try {
                s = f.getRemoteAddressStrategy(p);
            } catch (Throwable e) {
                v.put("error", e.toString());
                out.add(v);
                continue;
            }
            Map<String, Object> m = new LinkedHashMap<>();
            for (String a : addrs) {
                PlainAccessResource r = new PlainAccessResource();
                r.setWhiteRemoteAddress(a);
                try {
                    m.put(a, s.match(r));
                } catch (Throwable e) {
                    m.put(a, e.toString());
                }
            }
            v.put("matches", m);
            out.add(v);
        }
        return out;
    }

    static final String ACL_YML = String.join("\n",
        "globalWhiteRemoteAddresses:",
        "  - 10.10.103.*",
        "accounts:",
        "  - accessKey: RocketMQ",
        "    secretKey: 12345678",
        "    whiteRemoteAddress:",
        "    admin: false",
        "    defaultTopicPerm: DENY",
        "    defaultGroupPerm: SUB",
        "    topicPerms:",
        "      - topicA=DENY",
        "      - topicB=PUB|SUB",
        "      - topicC=SUB",
        "    groupPerms:",
        "      - groupA=DENY",
        "      - groupB=PUB|SUB",
        "      - groupC=SUB",
        "  - accessKey: rocketmq2",
        "    secretKey: 12345678",
        "    whiteRemoteAddress: 192.168.1.*",
        "    admin: true",
        "");

    interface Req {
        RemotingCommand make();
    }

    static Map<String, Object> verdict(PlainAccessValidator v, String name, String remote, Req req, String ak, String sk, boolean tamper) {
        RemotingCommand r = req.make();
        if (ak != null) new AclClientRPCHook(new SessionCredentials(ak, sk)).doBeforeRequest(remote, r);
        if (tamper) r.addExtField("Signature", "AAAAAAAAAAAAAAAAAAAAAAAAAAA=");
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("name", name);
        out.put("remote", remote);
        out.put("code", r.getCode());
        out.put("extFields", r.getExtFields() == null ? null : new TreeMap<>(r.getExtFields()));
        out.put("bodyBase64", r.getBody() == null ? null : Base64.getEncoder().encodeToString(r.getBody()));
        try {
            v.validate(v.parse(r, remote));
            out.put("allowed", true);
        } catch (Throwable e) {
            out.put("allowed", false);
            out.put("error", e.toString());
        }
        return out;
    }

    static Map<String, Object> validator() throws Exception {
        Path home = Files.createTempDirectory("golden-acl");
        Files.createDirectories(home.resolve("conf"));
        Files.writeString(home.resolve("conf/plain_acl.yml"), ACL_YML);
        System.setProperty("rocketmq.home.dir", home.toString());
        PlainAccessValidator v = new PlainAccessValidator();
        String other = "172.16.0.9:50000";
        Req topic17 = () -> {
            RemotingCommand r = RemotingCommand.createRequestCommand(RequestCode.UPDATE_AND_CREATE_TOPIC, null);
            r.addExtField("topic", "newTopic");
            return r;
        };
        List<Object> cases = new ArrayList<>();
        cases.add(verdict(v, "global white list, no credentials", "10.10.103.7:1", () -> send("pg", "topicA", new byte[1]), null, null, false));
        cases.add(verdict(v, "no access key", other, () -> send("pg", "topicB", new byte[1]), null, null, false));
        cases.add(verdict(v, "no ext fields at all", other, () -> RemotingCommand.createRequestCommand(RequestCode.GET_ALL_TOPIC_CONFIG, null), null, null, false));
        cases.add(verdict(v, "unknown access key", other, () -> send("pg", "topicB", new byte[1]), "nobody1", SK, false));
        cases.add(verdict(v, "bad signature", other, () -> send("pg", "topicB", new byte[1]), AK, SK, true));
        cases.add(verdict(v, "wrong secret", other, () -> send("pg", "topicB", new byte[1]), AK, "87654321", false));
        cases.add(verdict(v, "account white list skips the signature", "192.168.1.20:3", () -> send("pg", "topicA", new byte[1]), "rocketmq2", SK, true));
        cases.add(verdict(v, "send to PUB|SUB topic", other, () -> send("pg", "topicB", new byte[1]), AK, SK, false));
        cases.add(verdict(v, "send to DENY topic", other, () -> send("pg", "topicA", new byte[1]), AK, SK, false));
        cases.add(verdict(v, "send to SUB topic", other, () -> send("pg", "topicC", new byte[1]), AK, SK, false));
        cases.add(verdict(v, "send to default-DENY topic", other, () -> send("pg", "topicX", new byte[1]), AK, SK, false));
        cases.add(verdict(v, "send to the trace topic", other, () -> send("pg", "RMQ_SYS_TRACE_TOPIC", new byte[1]), AK, SK, false));
        cases.add(verdict(v, "send back to a retry topic of a SUB group", other, () -> send("groupC", "%RETRY%groupC", new byte[1]), AK, SK, false));
        cases.add(verdict(v, "send back to a retry topic of a DENY group", other, () -> send("groupA", "%RETRY%groupA", new byte[1]), AK, SK, false));
        cases.add(verdict(v, "pull SUB topic, SUB group", other, () -> pull("groupC", "topicC"), AK, SK, false));
        cases.add(verdict(v, "pull SUB topic, DENY group", other, () -> pull("groupA", "topicC"), AK, SK, false));
        cases.add(verdict(v, "pull DENY topic, default group", other, () -> pull("groupX", "topicA"), AK, SK, false));
        cases.add(verdict(v, "heartbeat, allowed", other, () -> heartbeat("groupC", "topicC"), AK, SK, false));
        cases.add(verdict(v, "heartbeat, DENY topic", other, () -> heartbeat("groupC", "topicA"), AK, SK, false));
        cases.add(verdict(v, "admin request by a normal account", other, topic17, AK, SK, false));
        cases.add(verdict(v, "admin request by an admin account", other, topic17, "rocketmq2", SK, false));
        cases.add(verdict(v, "admin account, any topic", other, () -> send("pg", "topicX", new byte[1]), "rocketmq2", SK, false));
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("plainAclYml", ACL_YML);
        out.put("cases", cases);
        return out;
    }
}
