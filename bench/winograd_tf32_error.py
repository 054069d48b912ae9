#!/usr/bin/env python3
# bench/winograd_tf32_error.py — what TF32 products cost Winograd's accuracy, emulated in numpy (no GPU):
# a 3x3 stride-1 convolution of random values in [-1, 1) computed (a) directly, its inputs rounded to TF32
# (10 mantissa bits, as the tensor cores read them) and the products summed exactly, and (b) by Winograd
# F(2x2, 3x3) and F(4x4, 3x3) with float transforms, the transformed inputs and filters rounded to TF32
# before their products (winograd_2x2 / winograd_4x4 under Stream::set_tf32). Prints each one's error
# against float64, max |err| / max |ref| (the tests' measure). The GPU's own: bench/conv_accuracy.cu.
#
# Usage: python3 bench/winograd_tf32_error.py
import numpy as np

F2 = (np.array([[1, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0], [0, 1, 0, -1]], np.float32),
      np.array([[1, 0, 0], [.5, .5, .5], [.5, -.5, .5], [0, 0, 1]], np.float32),
      np.array([[1, 1, 1, 0], [0, 1, -1, -1]], np.float32))
F4 = (np.array([[4, 0, -5, 0, 1, 0], [0, -4, -4, 1, 1, 0], [0, 4, -4, -1, 1, 0], [0, -2, -1, 2, 1, 0],
                [0, 2, -1, -2, 1, 0], [0, 4, 0, -5, 0, 1]], np.float32),
      np.array([[1 / 4, 0, 0], [-1 / 6, -1 / 6, -1 / 6], [-1 / 6, 1 / 6, -1 / 6], [1 / 24, 1 / 12, 1 / 6],
                [1 / 24, -1 / 12, 1 / 6], [0, 0, 1]], np.float32),
      np.array([[1, 1, 1, 1, 1, 0], [0, 1, -1, 2, -2, 0], [0, 1, 1, 4, 4, 0], [0, 1, -1, 8, -8, 1]], np.float32))


def tf32(a):
    """Float32 values rounded to nearest even at TF32's 10 mantissa bits."""
    bits = np.asarray(a, np.float32).view(np.uint32).astype(np.uint64)
    bits = (bits + 0xFFF + ((bits >> 13) & 1)) & ~np.uint64(0x1FFF)
    return bits.astype(np.uint32).view(np.float32).astype(np.float64)


def errors(C, K, H, N=2, seed=1):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1, 1, (N, C, H, H)).astype(np.float32)
    w = rng.uniform(-1, 1, (K, C, 3, 3)).astype(np.float32)
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    cols = np.stack([xp[:, :, r:r + H, s:s + H] for r in range(3) for s in range(3)], axis=2)
    ref = np.einsum('nckhw,mck->nmhw', cols.astype(np.float64), w.reshape(K, C, 9).astype(np.float64))
    direct = np.einsum('nckhw,mck->nmhw', tf32(cols), tf32(w.reshape(K, C, 9)))
    out = {'direct': direct}
    for name, (Bt, G, At) in (('F(2x2,3x3)', F2), ('F(4x4,3x3)', F4)):
        m, a = At.shape[0], Bt.shape[0]  # output and input tile sizes
        T = H // m
        xt = np.pad(x, ((0, 0), (0, 0), (1, a - 1), (1, a - 1)))
        tiles = np.stack([np.stack([xt[:, :, m * i:m * i + a, m * j:m * j + a] for j in range(T)], 2)
                          for i in range(T)], 2)
        V = np.einsum('ap,nctupq,bq->nctuab', Bt, tiles, Bt).astype(np.float32)
        U = np.einsum('ar,kcrs,bs->kcab', G, w, G).astype(np.float32)
        M = np.einsum('nctuab,kcab->nktuab', tf32(V), tf32(U)).astype(np.float32)
        Y = np.einsum('ap,nktupq,bq->nktuab', At, M, At)
        out[name] = Y.transpose(0, 1, 2, 4, 3, 5).reshape(N, K, T * m, T * m)
    scale = np.abs(ref).max()
    return {k: np.abs(v - ref).max() / scale for k, v in out.items()}


if __name__ == '__main__':
    print('C K H: max |err| / max |ref| of TF32 direct, F(2x2,3x3), F(4x4,3x3)')
    for C, K, H in [(64, 64, 16), (256, 256, 16), (512, 512, 8)]:
        e = errors(C, K, H)
        print(C, K, H, ' '.join('%s %.2e' % (k, v) for k, v in e.items()))
