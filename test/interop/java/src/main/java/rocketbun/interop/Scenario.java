package rocketbun.interop;

/** One interop scenario: returns a short description of what it saw, or throws {@link Ctx.Failure}. */
@FunctionalInterface
public interface Scenario {
    String run(Ctx ctx) throws Exception;
}
