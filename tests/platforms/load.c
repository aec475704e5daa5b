/*
 * Loads a shared library with the dynamic loader this program was linked for (musl's, in
 * tests/platforms/smoke.sh) and binds every symbol at once (RTLD_NOW): a library that needs a C
 * library symbol the loader's libc lacks fails here, as it would in a JVM on that system. Then
 * looks up the exported names given after the library.
 *
 *   load LIBRARY [SYMBOL...]
 */
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: load LIBRARY [SYMBOL...]\n");
        return 2;
    }
    void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL) {
        fprintf(stderr, "cannot load %s: %s\n", argv[1], dlerror());
        return 1;
    }
    for (int i = 2; i < argc; i++) {
        if (dlsym(lib, argv[i]) == NULL) {
            fprintf(stderr, "%s: no symbol %s\n", argv[1], argv[i]);
            return 1;
        }
    }
    printf("%s: loaded, every symbol bound, %d exported names found\n", argv[1], argc - 2);
    return 0;
}
