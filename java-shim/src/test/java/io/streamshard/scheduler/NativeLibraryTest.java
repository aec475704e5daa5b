package io.streamshard.scheduler;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

class NativeLibraryTest {

    @Test
    void missingLibraryNamesTheFileAndTheReason() {
        assertThatThrownBy(() -> NativeLibrary.load(
                        "META-INF/native/linux-x86_64/libmissing.so", NativeLibraryTest.class.getClassLoader()))
                .isInstanceOf(NativeLibraryException.class)
                .hasMessageContaining("META-INF/native/linux-x86_64/libmissing.so")
                .hasMessageContaining("not found on the class path");
    }

    @Test
    void unloadableLibraryNamesTheFileAndTheReason() {
        // A resource that exists but is not a shared library.
        assertThatThrownBy(() -> NativeLibrary.load(
                        "io/streamshard/scheduler/not-a-library.so", NativeLibraryTest.class.getClassLoader()))
                .isInstanceOf(NativeLibraryException.class)
                .hasMessageContaining("cannot load native library")
                .hasMessageContaining("not-a-library.so");
    }

    @Test
    void eachOsAndArchitectureMapsToItsLibrary() {
        assertThat(NativeLibrary.platform("Linux", "amd64", false)).isEqualTo("linux-x86_64");
        assertThat(NativeLibrary.platform("Linux", "x86_64", false)).isEqualTo("linux-x86_64");
        assertThat(NativeLibrary.platform("Linux", "aarch64", false)).isEqualTo("linux-aarch64");
        assertThat(NativeLibrary.platform("Linux", "amd64", true)).isEqualTo("linux-x86_64-musl");
        assertThat(NativeLibrary.platform("Linux", "aarch64", true)).isEqualTo("linux-aarch64-musl");
        assertThat(NativeLibrary.platform("Mac OS X", "aarch64", false)).isEqualTo("macos-aarch64");
        assertThat(NativeLibrary.platform("Mac OS X", "x86_64", false)).isEqualTo("macos-x86_64");
        assertThat(NativeLibrary.platform("Windows 11", "amd64", false)).isNull();
        assertThat(NativeLibrary.platform("Linux", "ppc64le", false)).isNull();
        assertThat(NativeLibrary.platform("Linux", "s390x", false)).isNull();
        assertThat(NativeLibrary.fileName("macos-aarch64")).isEqualTo("libstreamshard_jni.dylib");
        assertThat(NativeLibrary.fileName("linux-aarch64-musl")).isEqualTo("libstreamshard_jni.so");
        for (String p : NativeLibrary.PLATFORMS) {
            assertThat(p).matches("(linux|macos)-(x86_64|aarch64)(-musl)?");
        }
    }

    @Test
    void muslIsTheCLibraryMappedIntoTheProcessNotOneInstalledBeside() {
        String alpine = "7f1c2a000000-7f1c2a014000 r--p 00000000 00:2c 1234 /lib/ld-musl-x86_64.so.1\n"
                + "7f1c2a100000-7f1c2a200000 r-xp 00000000 00:2c 99 /usr/lib/jvm/java-17/lib/server/libjvm.so\n";
        String debian = "7f00000000-7f00001000 r--p 00000000 08:01 11 /usr/lib/x86_64-linux-gnu/libc.so.6\n"
                + "7f00100000-7f00101000 r--p 00000000 08:01 12 /usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2\n"
                + "7f00200000-7f00201000 r--p 00000000 08:01 13 /opt/tools/ld-musl-notes.txt.d/readme\n";
        String aarch64Alpine = "ffff80000000-ffff80010000 r-xp 00000000 00:2c 5 /lib/libc.musl-aarch64.so.1\n";
        assertThat(NativeLibrary.musl(alpine)).isTrue();
        assertThat(NativeLibrary.musl(aarch64Alpine)).isTrue();
        assertThat(NativeLibrary.musl(debian)).isFalse();
        assertThat(NativeLibrary.musl("")).isFalse();
    }

    @Test
    void thisJvmIsGlibcAndGetsTheGlibcBuild() {
        // The machines the tests run on are glibc Linux on x86_64 or aarch64.
        assertThat(NativeLibrary.musl()).isFalse();
        assertThat(NativeLibrary.resource()).matches("META-INF/native/linux-(x86_64|aarch64)/libstreamshard_jni\\.so");
    }
}
