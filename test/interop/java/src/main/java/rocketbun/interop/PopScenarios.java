package rocketbun.interop;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The names of the POP consumption scenarios (RocketMQ 5.x: a push consumer with client rebalance
 * off pops, acks and changes invisible times instead of pulling). They use the 5.x client's API
 * directly, so they live in ../../../../client5/java (PopClientScenarios), which only client-5 compiles;
 * a runner built without it (client-4, 4.9.8) registers every name as not applicable, so both
 * builds list the same scenarios.
 */
final class PopScenarios {
    private PopScenarios() {}

    static final List<String> NAMES = List.of("pop-basic", "pop-redeliver", "pop-no-ack", "pop-filter", "pop-share", "pop-mqadmin", "pop-orderly",
        "pop-switch");

    static void register(Map<String, Scenario> m) {
        Map<String, Scenario> five = new LinkedHashMap<>();
        try {
            Class.forName("rocketbun.interop.PopClientScenarios").getDeclaredMethod("register", Map.class).invoke(null, five);
        } catch (ClassNotFoundException e) {
            // client-4: no POP API.
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("PopClientScenarios.register", e);
        }
        if (!five.isEmpty() && !five.keySet().equals(new java.util.LinkedHashSet<>(NAMES))) {
            throw new IllegalStateException("PopClientScenarios registers " + five.keySet() + ", PopScenarios.NAMES lists " + NAMES);
        }
        for (String n : NAMES) {
            m.put(n, five.getOrDefault(n, ctx -> Ctx.NOT_APPLICABLE + "POP consumption (setClientRebalance(false)) is a 5.x client API"));
        }
    }
}
