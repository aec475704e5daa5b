package io.streamshard.scheduler;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

class NativeLibraryTest {

    @Test
    void missingLibraryNamesTheFileAndTheReason() {
        assertThatThrownBy(() -> NativeLibrary.load("META-INF/native/linux-x86_64/libmissing.so",
                        NativeLibraryTest.class.getClassLoader()))
                .isInstanceOf(NativeLibraryException.class)
                .hasMessageContaining("META-INF/native/linux-x86_64/libmissing.so")
                .hasMessageContaining("not found on the class path");
    }

    @Test
    void unloadableLibraryNamesTheFileAndTheReason() {
        // A resource that exists but is not a shared library.
        assertThatThrownBy(() -> NativeLibrary.load("io/streamshard/scheduler/not-a-library.so",
                        NativeLibraryTest.class.getClassLoader()))
                .isInstanceOf(NativeLibraryException.class)
                .hasMessageContaining("cannot load native library")
                .hasMessageContaining("not-a-library.so");
    }
}
