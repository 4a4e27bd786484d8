// SHOC MD5Hash FindKeyWithDigest_Kernel: thread t tries keys t*keyspan .. t*keyspan+keyspan-1 (byteLength
// digits base valsPerByte, one byte each), hashes each with MD5 in registers and, on a match with the
// searched digest, writes the index to foundIndex and the key bytes to foundKey (global memory).
#define ROTL(x, n) (((x) << (n)) | ((x) >> (32 - (n))))
#define STEP(F, G, K, S) { unsigned int t_ = d; d = c; c = b; b = b + ROTL(a + F + K + m[G], S); a = t_; }
__device__ inline void md5(const unsigned int *m, unsigned int &A, unsigned int &B, unsigned int &C, unsigned int &D)
{
    unsigned int a = 0x67452301u, b = 0xefcdab89u, c = 0x98badcfeu, d = 0x10325476u;
    STEP(((b & c) | (~b & d)), 0, 0xd76aa478u, 7);
    STEP(((b & c) | (~b & d)), 1, 0xe8c7b756u, 12);
    STEP(((b & c) | (~b & d)), 2, 0x242070dbu, 17);
    STEP(((b & c) | (~b & d)), 3, 0xc1bdceeeu, 22);
    STEP(((b & c) | (~b & d)), 4, 0xf57c0fafu, 7);
    STEP(((b & c) | (~b & d)), 5, 0x4787c62au, 12);
    STEP(((b & c) | (~b & d)), 6, 0xa8304613u, 17);
    STEP(((b & c) | (~b & d)), 7, 0xfd469501u, 22);
    STEP(((b & c) | (~b & d)), 8, 0x698098d8u, 7);
    STEP(((b & c) | (~b & d)), 9, 0x8b44f7afu, 12);
    STEP(((b & c) | (~b & d)), 10, 0xffff5bb1u, 17);
    STEP(((b & c) | (~b & d)), 11, 0x895cd7beu, 22);
    STEP(((b & c) | (~b & d)), 12, 0x6b901122u, 7);
    STEP(((b & c) | (~b & d)), 13, 0xfd987193u, 12);
    STEP(((b & c) | (~b & d)), 14, 0xa679438eu, 17);
    STEP(((b & c) | (~b & d)), 15, 0x49b40821u, 22);
    STEP(((d & b) | (~d & c)), 1, 0xf61e2562u, 5);
    STEP(((d & b) | (~d & c)), 6, 0xc040b340u, 9);
    STEP(((d & b) | (~d & c)), 11, 0x265e5a51u, 14);
    STEP(((d & b) | (~d & c)), 0, 0xe9b6c7aau, 20);
    STEP(((d & b) | (~d & c)), 5, 0xd62f105du, 5);
    STEP(((d & b) | (~d & c)), 10, 0x02441453u, 9);
    STEP(((d & b) | (~d & c)), 15, 0xd8a1e681u, 14);
    STEP(((d & b) | (~d & c)), 4, 0xe7d3fbc8u, 20);
    STEP(((d & b) | (~d & c)), 9, 0x21e1cde6u, 5);
    STEP(((d & b) | (~d & c)), 14, 0xc33707d6u, 9);
    STEP(((d & b) | (~d & c)), 3, 0xf4d50d87u, 14);
    STEP(((d & b) | (~d & c)), 8, 0x455a14edu, 20);
    STEP(((d & b) | (~d & c)), 13, 0xa9e3e905u, 5);
    STEP(((d & b) | (~d & c)), 2, 0xfcefa3f8u, 9);
    STEP(((d & b) | (~d & c)), 7, 0x676f02d9u, 14);
    STEP(((d & b) | (~d & c)), 12, 0x8d2a4c8au, 20);
    STEP((b ^ c ^ d), 5, 0xfffa3942u, 4);
    STEP((b ^ c ^ d), 8, 0x8771f681u, 11);
    STEP((b ^ c ^ d), 11, 0x6d9d6122u, 16);
    STEP((b ^ c ^ d), 14, 0xfde5380cu, 23);
    STEP((b ^ c ^ d), 1, 0xa4beea44u, 4);
    STEP((b ^ c ^ d), 4, 0x4bdecfa9u, 11);
    STEP((b ^ c ^ d), 7, 0xf6bb4b60u, 16);
    STEP((b ^ c ^ d), 10, 0xbebfbc70u, 23);
    STEP((b ^ c ^ d), 13, 0x289b7ec6u, 4);
    STEP((b ^ c ^ d), 0, 0xeaa127fau, 11);
    STEP((b ^ c ^ d), 3, 0xd4ef3085u, 16);
    STEP((b ^ c ^ d), 6, 0x04881d05u, 23);
    STEP((b ^ c ^ d), 9, 0xd9d4d039u, 4);
    STEP((b ^ c ^ d), 12, 0xe6db99e5u, 11);
    STEP((b ^ c ^ d), 15, 0x1fa27cf8u, 16);
    STEP((b ^ c ^ d), 2, 0xc4ac5665u, 23);
    STEP((c ^ (b | ~d)), 0, 0xf4292244u, 6);
    STEP((c ^ (b | ~d)), 7, 0x432aff97u, 10);
    STEP((c ^ (b | ~d)), 14, 0xab9423a7u, 15);
    STEP((c ^ (b | ~d)), 5, 0xfc93a039u, 21);
    STEP((c ^ (b | ~d)), 12, 0x655b59c3u, 6);
    STEP((c ^ (b | ~d)), 3, 0x8f0ccc92u, 10);
    STEP((c ^ (b | ~d)), 10, 0xffeff47du, 15);
    STEP((c ^ (b | ~d)), 1, 0x85845dd1u, 21);
    STEP((c ^ (b | ~d)), 8, 0x6fa87e4fu, 6);
    STEP((c ^ (b | ~d)), 15, 0xfe2ce6e0u, 10);
    STEP((c ^ (b | ~d)), 6, 0xa3014314u, 15);
    STEP((c ^ (b | ~d)), 13, 0x4e0811a1u, 21);
    STEP((c ^ (b | ~d)), 4, 0xf7537e82u, 6);
    STEP((c ^ (b | ~d)), 11, 0xbd3af235u, 10);
    STEP((c ^ (b | ~d)), 2, 0x2ad7d2bbu, 15);
    STEP((c ^ (b | ~d)), 9, 0xeb86d391u, 21);
    A = a + 0x67452301u; B = b + 0xefcdab89u; C = c + 0x98badcfeu; D = d + 0x10325476u;
}
extern "C" __global__ void md5hash(int byteLength, int valsPerByte, int keyspan, unsigned int d0, unsigned int d1,
                                   unsigned int d2, unsigned int d3, int *foundIndex, unsigned char *foundKey)
{
    int start = (blockIdx.x * blockDim.x + threadIdx.x) * keyspan;
    unsigned char key[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int v = start;
    for (int i = 0; i < byteLength; i++) { key[i] = v % valsPerByte; v /= valsPerByte; }
    for (int k = 0; k < keyspan; k++) {
        unsigned int m[16];
        for (int i = 0; i < 16; i++) m[i] = 0;
        for (int i = 0; i < byteLength; i++) m[i >> 2] |= ((unsigned int)key[i]) << (8 * (i & 3));
        m[byteLength >> 2] |= 0x80u << (8 * (byteLength & 3));
        m[14] = byteLength * 8;
        unsigned int a, b, c, d;
        md5(m, a, b, c, d);
        if (a == d0 && b == d1 && c == d2 && d == d3) {
            *foundIndex = start + k;
            for (int i = 0; i < 8; i++) foundKey[i] = key[i];
        }
        for (int i = 0; i < byteLength; i++) {
            if (++key[i] < valsPerByte) break;
            key[i] = 0;
        }
    }
}
