package io.streamshard.agent;

import java.lang.instrument.IllegalClassFormatException;
import java.security.ProtectionDomain;
import java.util.HashSet;
import java.util.Set;
import net.bytebuddy.agent.builder.ResettableClassFileTransformer;

/**
 * The registered transformer: hands ByteBuddy only the classes the agent instruments, by
 * name. Otherwise every class the JVM loads went through ByteBuddy's type matching, which
 * parses its class file; with thousands of classes that cost about a second of CPU at start
 * and made ByteBuddy's parser hot enough for the JIT compiler to spend more on it while the
 * application was already processing.
 */
final class OnlyNamed extends ResettableClassFileTransformer.WithDelegation {
    private final Set<String> internalNames = new HashSet<>();

    OnlyNamed(ResettableClassFileTransformer delegate, Set<String> types) {
        super(delegate);
        types.forEach(t -> internalNames.add(t.replace('.', '/')));
    }

    @Override
    public byte[] transform(
            ClassLoader loader, String className, Class<?> redefined, ProtectionDomain domain, byte[] classFile)
            throws IllegalClassFormatException {
        return className != null && internalNames.contains(className)
                ? classFileTransformer.transform(loader, className, redefined, domain, classFile)
                : null;
    }

    @Override
    public byte[] transform(
            Module module,
            ClassLoader loader,
            String className,
            Class<?> redefined,
            ProtectionDomain domain,
            byte[] classFile)
            throws IllegalClassFormatException {
        return className != null && internalNames.contains(className)
                ? classFileTransformer.transform(module, loader, className, redefined, domain, classFile)
                : null;
    }
}
