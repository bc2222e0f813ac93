//! The macros that stamp out the per-sample passes in plain, AVX2 and AVX-512 forms.

/// First pass over a batch (vectorisable, no branches): the code of every sample outside
/// `[first, last]` (`n`, `n + 1`, `n + 2` for below, above, NaN) and numpy's arithmetic estimate,
/// clamped to `[0, n - 1]`, for every sample inside. `$est` is numpy's estimate of `x`.
macro_rules! estimate_pass {
    ($name:ident, $avx2:ident, $avx512:ident, $t:ty, |$x:ident, $first:ident, $p:ident| $est:expr) => {
        #[inline(always)]
        pub(super) fn $name(
            xs: &[$t],
            out: &mut [u32],
            edges: &[$t],
            $first: $t,
            last: $t,
            $p: EstimateParams,
        ) {
            let n = $p.n;
            assert_eq!(edges.len(), n as usize + 1);
            let top = (n - 1) as f64;
            for (o, &$x) in out.iter_mut().zip(xs) {
                let inside = ($x >= $first) & ($x <= last);
                #[allow(clippy::eq_op)]
                let nan = ($x != $x) as u32;
                let outside = n + ($x > last) as u32 + 2 * nan;
                let e: f64 = $est;
                // SAFETY: `max` drops NaN, so the value is finite and in [0, n - 1] < 2^30.
                let e = unsafe { e.max(0.0).min(top).to_int_unchecked::<i32>() } as u32;
                // numpy's correction against the actual edges; both tests use the estimate
                // (numpy increments only where it did not decrement, and after a decrement the
                // increment test is false anyway), so the two loads are independent.
                // SAFETY: e <= n - 1 and edges.len() == n + 1 (asserted above).
                let (lo, hi) = unsafe {
                    (
                        *edges.get_unchecked(e as usize),
                        *edges.get_unchecked(e as usize + 1),
                    )
                };
                let dec = (e != 0) & ($x < lo);
                let inc = !dec & (e != n - 1) & ($x >= hi);
                let fixed = e.wrapping_sub(dec as u32).wrapping_add(inc as u32);
                *o = if inside { fixed } else { outside };
            }
        }
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = "avx2")]
        pub(super) unsafe fn $avx2(
            xs: &[$t],
            out: &mut [u32],
            edges: &[$t],
            first: $t,
            last: $t,
            p: EstimateParams,
        ) {
            $name(xs, out, edges, first, last, p)
        }
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = "avx2,avx512f,avx512vl,avx512dq")]
        pub(super) unsafe fn $avx512(
            xs: &[$t],
            out: &mut [u32],
            edges: &[$t],
            first: $t,
            last: $t,
            p: EstimateParams,
        ) {
            $name(xs, out, edges, first, last, p)
        }
    };
}

/// Runs an estimate pass, with AVX2 where the CPU has it.
macro_rules! run_pass {
    ($name:ident, $avx2:ident, $avx512:ident, $($arg:expr),*) => {{
        #[cfg(target_arch = "x86_64")]
        {
            if std::is_x86_feature_detected!("avx512f")
                && std::is_x86_feature_detected!("avx512vl")
                && std::is_x86_feature_detected!("avx512dq")
            {
                // SAFETY: the CPU supports these features (checked just above).
                unsafe { $avx512($($arg),*) }
            } else if std::is_x86_feature_detected!("avx2") {
                // SAFETY: the CPU supports AVX2 (checked just above).
                unsafe { $avx2($($arg),*) }
            } else {
                $name($($arg),*)
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            $name($($arg),*)
        }
    }};
}

/// Adds one to the counters of `codes` (an iterator of u32), spread over `ways` interleaved
/// copies of `stride` counters in `scratch`.
macro_rules! count_codes {
    ($codes:expr, $scratch:expr, $stride:expr, $ways:expr) => {{
        let stride = $stride;
        let mut it = $codes;
        match $ways {
            4 => {
                let (s0, rest) = $scratch.split_at_mut(stride);
                let (s1, rest) = rest.split_at_mut(stride);
                let (s2, s3) = rest.split_at_mut(stride);
                let s3 = &mut s3[..stride];
                loop {
                    let Some(a) = it.next() else { break };
                    s0[a as usize] += 1;
                    let Some(b) = it.next() else { break };
                    s1[b as usize] += 1;
                    let Some(c) = it.next() else { break };
                    s2[c as usize] += 1;
                    let Some(d) = it.next() else { break };
                    s3[d as usize] += 1;
                }
            }
            2 => {
                let (s0, s1) = $scratch.split_at_mut(stride);
                let s1 = &mut s1[..stride];
                loop {
                    let Some(a) = it.next() else { break };
                    s0[a as usize] += 1;
                    let Some(b) = it.next() else { break };
                    s1[b as usize] += 1;
                }
            }
            _ => {
                let s0 = &mut $scratch[..stride];
                for c in it {
                    s0[c as usize] += 1;
                }
            }
        }
    }};
}
