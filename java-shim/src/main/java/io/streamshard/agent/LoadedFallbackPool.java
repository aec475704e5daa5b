package io.streamshard.agent;

import net.bytebuddy.agent.builder.AgentBuilder;
import net.bytebuddy.description.type.TypeDescription;
import net.bytebuddy.dynamic.ClassFileLocator;
import net.bytebuddy.pool.TypePool;

/**
 * The type pool the transformer describes classes with: class files first (as ByteBuddy's
 * default), and for a type with no class file anywhere, the class itself if its class loader has
 * it.
 *
 * <p>Why: another agent transforms a class before this one and adds an interface it generated at
 * run time (OpenTelemetry's Java agent adds {@code VirtualFieldAccessor$…} interfaces to
 * {@code StreamThread}, defined straight into the class loader, with no class file). ByteBuddy
 * describes the interfaces of the class it rewrites (its method graph), found no class file for
 * that one and failed, so the application ran stock. Such a type is always defined already (the
 * JVM needs it to define the class being transformed, and nothing could load it from a file), so
 * asking its class loader for it loads nothing new; a type that resolves from a class file never
 * comes here.
 */
final class LoadedFallbackPool extends TypePool.Default.WithLazyResolution {
    private final ClassLoader loader;

    LoadedFallbackPool(ClassFileLocator locator, ClassLoader loader) {
        super(TypePool.CacheProvider.Simple.withObjectType(), locator, TypePool.Default.ReaderMode.FAST);
        this.loader = loader;
    }

    // Both ways in: describe (a type named in a signature) and doResolve (a lazy description's
    // delegate). The pool caches the unresolved result, so each asks the fallback again.
    @Override
    public Resolution describe(String name) {
        return orLoaded(super.describe(name), name);
    }

    @Override
    protected Resolution doResolve(String name) {
        return orLoaded(super.doResolve(name), name);
    }

    private Resolution orLoaded(Resolution r, String name) {
        if (r.isResolved()) {
            return r;
        }
        Class<?> loaded = loaded(name, loader);
        return loaded == null ? r : new Resolution.Simple(TypeDescription.ForLoadedType.of(loaded));
    }

    /** {@code name} as {@code loader} (or the bootstrap loader, for null) has it; null if it has none. */
    static Class<?> loaded(String name, ClassLoader loader) {
        try {
            return Class.forName(name, false, loader);
        } catch (ClassNotFoundException | LinkageError e) {
            return null;
        }
    }

    /** The transformer's pool strategy: one such pool per transformation. */
    static final class Strategy implements AgentBuilder.PoolStrategy {
        @Override
        public TypePool typePool(ClassFileLocator locator, ClassLoader loader) {
            return new LoadedFallbackPool(locator, loader);
        }

        @Override
        public TypePool typePool(ClassFileLocator locator, ClassLoader loader, String name) {
            return typePool(locator, loader);
        }
    }
}
