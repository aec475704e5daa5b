package io.streamshard.examples;

import java.util.Random;

/** Keys 0..n-1 with weight 1/(i+1)^s, drawn by inverting a precomputed CDF. Seeded. */
final class Zipf {
    private final double[] cdf;
    private final Random random;

    Zipf(int n, double s, long seed) {
        cdf = new double[n];
        double total = 0;
        for (int i = 0; i < n; i++) {
            total += 1.0 / Math.pow(i + 1, s);
            cdf[i] = total;
        }
        for (int i = 0; i < n; i++) {
            cdf[i] /= total;
        }
        random = new Random(seed);
    }

    int next() {
        double u = random.nextDouble();
        int lo = 0;
        int hi = cdf.length - 1;
        while (lo < hi) {
            int mid = (lo + hi) >>> 1;
            if (cdf[mid] <= u) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        return lo;
    }
}
