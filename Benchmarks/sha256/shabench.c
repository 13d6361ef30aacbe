/* SHA-256 throughput in CPU seconds: swift-crypto's vendored BoringSSL (linked from ingest's release build) against the
   system's OpenSSL libcrypto EVP, same buffer, same process. Built and run by Benchmarks/sha256.sh. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <openssl/evp.h>
/* BoringSSL as swift-crypto vendors it (symbols prefixed CCryptoBoringSSL_), linked from ingest's release build. */
typedef struct { unsigned int h[8]; unsigned int Nl, Nh; unsigned char data[64]; unsigned num, md_len; } BSHA256_CTX;
int CCryptoBoringSSL_SHA256_Init(BSHA256_CTX *);
int CCryptoBoringSSL_SHA256_Update(BSHA256_CTX *, const void *, size_t);
int CCryptoBoringSSL_SHA256_Final(unsigned char *, BSHA256_CTX *);
static double cpu(void) { struct rusage u; getrusage(RUSAGE_SELF, &u); return u.ru_utime.tv_sec + u.ru_utime.tv_usec / 1e6 + u.ru_stime.tv_sec + u.ru_stime.tv_usec / 1e6; }
int main(int argc, char **argv) {
    size_t mib = argc > 1 ? atoi(argv[1]) : 1024, chunk = argc > 2 ? atoi(argv[2]) : 262144, rounds = mib * 1048576 / chunk;
    unsigned char *buf = aligned_alloc(64, chunk), out[32];
    for (size_t i = 0; i < chunk; i++) buf[i] = (unsigned char)(i * 31);
    for (int kind = 0; kind < 2; kind++) {
        double best = 1e9;
        for (int t = 0; t < 3; t++) {
            double start = cpu();
            if (kind == 0) { BSHA256_CTX c; CCryptoBoringSSL_SHA256_Init(&c); for (size_t r = 0; r < rounds; r++) CCryptoBoringSSL_SHA256_Update(&c, buf, chunk); CCryptoBoringSSL_SHA256_Final(out, &c); }
            else { EVP_MD_CTX *c = EVP_MD_CTX_new(); unsigned n; EVP_DigestInit_ex(c, EVP_sha256(), NULL); for (size_t r = 0; r < rounds; r++) EVP_DigestUpdate(c, buf, chunk); EVP_DigestFinal_ex(c, out, &n); EVP_MD_CTX_free(c); }
            double s = cpu() - start; if (s < best) best = s;
        }
        printf("%-42s %6.3f s CPU / %zu MiB = %5.0f MiB/s  (%02x%02x%02x%02x…)\n", kind == 0 ? "swift-crypto's BoringSSL SHA256_Update" : "system libcrypto 3.0 EVP sha256", best, mib, mib / best, out[0], out[1], out[2], out[3]);
    }
    return 0;
}
