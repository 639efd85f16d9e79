package rocketbun.interop;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * Runs interop scenarios with the RocketMQ Java client this build was compiled against (4.9.8 or
 * 5.3.3, see ../client-4 and ../client-5) and prints one JSON line per scenario on stdout:
 *   {"scenario":"send-sync","ok":true,"ms":812,"detail":"..."}
 * Scenarios assert for themselves (delivered sets, order, counts, error codes) and throw
 * {@link Ctx.Failure} with what differed. Usage:
 *   java -cp ... rocketbun.interop.Runner --namesrv 127.0.0.1:9876 --prefix p1 [--timeout-ms 60000] [scenario ...]
 * With no scenario named, all of SCENARIOS run. `--list` prints the names. The ACL scenarios take
 * their accounts from system properties (AclScenarios, Ctx.credentials).
 */
public final class Runner {
    static final Map<String, Scenario> SCENARIOS = new LinkedHashMap<>();
    /** Listed after SCENARIOS, run only when named: they need a broker with aclEnable (AclScenarios). */
    static final Map<String, Scenario> ACL_SCENARIOS = new LinkedHashMap<>();

    static {
        SendScenarios.register(SCENARIOS);
        ConsumeScenarios.register(SCENARIOS);
        FeatureScenarios.register(SCENARIOS);
        PopScenarios.register(SCENARIOS);
        AclScenarios.register(ACL_SCENARIOS);
    }

    public static void main(String[] args) throws Exception {
        String namesrv = null;
        String prefix = "interop";
        long timeoutMs = 60_000;
        List<String> names = new ArrayList<>();
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--namesrv": namesrv = args[++i]; break;
                case "--prefix": prefix = args[++i]; break;
                case "--timeout-ms": timeoutMs = Long.parseLong(args[++i]); break;
                case "--list":
                    for (String n : SCENARIOS.keySet()) System.out.println(n);
                    for (String n : ACL_SCENARIOS.keySet()) System.out.println(n);
                    return;
                default: names.add(args[i]);
            }
        }
        if (namesrv == null) {
            System.err.println("usage: Runner --namesrv host:port [--prefix p] [--timeout-ms n] [scenario ...]");
            System.exit(2);
        }
        if (names.isEmpty()) names.addAll(SCENARIOS.keySet());
        ExecutorService pool = Executors.newCachedThreadPool(r -> {
            Thread t = new Thread(r, "scenario");
            t.setDaemon(true);
            return t;
        });
        for (String name : names) {
            Scenario s = SCENARIOS.containsKey(name) ? SCENARIOS.get(name) : ACL_SCENARIOS.get(name);
            long t0 = System.currentTimeMillis();
            boolean ok = false;
            String detail;
            if (s == null) {
                detail = "no such scenario";
            } else {
                Ctx ctx = new Ctx(namesrv, prefix + "_" + name.replace('-', '_'));
                Future<String> f = pool.submit(() -> s.run(ctx));
                try {
                    detail = f.get(timeoutMs, TimeUnit.MILLISECONDS);
                    ok = true;
                } catch (TimeoutException e) {
                    f.cancel(true);
                    detail = "timed out after " + timeoutMs + " ms; " + ctx.progress();
                } catch (java.util.concurrent.ExecutionException e) {
                    Throwable c = e.getCause();
                    detail = (c instanceof Ctx.Failure ? "" : c.getClass().getName() + ": ") + c.getMessage() + rootCause(c);
                    if (!(c instanceof Ctx.Failure)) c.printStackTrace();
                } finally {
                    ctx.close();
                }
            }
            if (detail != null && detail.startsWith(Ctx.NOT_APPLICABLE)) {
                System.out.println(json(name, "n/a", System.currentTimeMillis() - t0, detail.substring(Ctx.NOT_APPLICABLE.length())));
            } else {
                System.out.println(json(name, ok ? "true" : "false", System.currentTimeMillis() - t0, detail));
            }
            System.out.flush();
        }
        System.exit(0);
    }

    private static String rootCause(Throwable t) {
        Throwable r = t;
        while (r.getCause() != null && r.getCause() != r) r = r.getCause();
        return r == t ? "" : " (cause: " + r.getClass().getSimpleName() + ": " + r.getMessage() + ")";
    }

    private static String json(String name, String ok, long ms, String detail) {
        return "{\"scenario\":" + quote(name) + ",\"ok\":" + (ok.equals("n/a") ? "\"n/a\"" : ok) + ",\"ms\":" + ms + ",\"detail\":"
            + quote(detail == null ? "" : detail) + "}";
    }

    static String quote(String s) {
        StringBuilder b = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            switch (c) {
                case '"': b.append("\\\""); break;
                case '\\': b.append("\\\\"); break;
                case '\n': b.append("\\n"); break;
                case '\r': b.append("\\r"); break;
                case '\t': b.append("\\t"); break;
                default:
                    if (c < 0x20) b.append(String.format("\\u%04x", (int) c));
                    else b.append(c);
            }
        }
        return b.append('"').toString();
    }
}
