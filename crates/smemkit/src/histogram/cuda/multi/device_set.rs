//! Which GPUs a histogram runs on, and how the input is cut into one shard per GPU.

use super::*;

/// Which GPUs a histogram runs on.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum DeviceSet {
    /// GPU 0 alone, through the single-GPU engine.
    #[default]
    Default,
    /// Every GPU the driver reports.
    All,
    /// These ordinals, in this order (the first one's counters hold the result).
    List(Vec<usize>),
}

impl DeviceSet {
    /// The ordinals, checked against the driver's count.
    pub fn resolve(&self) -> Result<Vec<usize>> {
        match self {
            DeviceSet::Default => Ok(vec![0]),
            DeviceSet::All => {
                let n = device_count()?;
                if n == 0 {
                    return Err(Error::CudaUnavailable(
                        "the CUDA driver reports no device".into(),
                    ));
                }
                Ok((0..n).collect())
            }
            DeviceSet::List(list) => {
                let count = device_count()?;
                if let Some(&d) = list.iter().find(|&&d| d >= count) {
                    return Err(Error::DeviceNotFound { ordinal: d, count });
                }
                Ok(list.clone())
            }
        }
    }
}

impl std::str::FromStr for DeviceSet {
    type Err = crate::error::Error;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let text = text.trim();
        if text == "all" {
            return Ok(DeviceSet::All);
        }
        let mut list = Vec::new();
        for part in text.split(',') {
            let d: usize = part.trim().parse().map_err(|_| {
                Error::InvalidArgument(format!(
                    "devices `{text}`: expected `all` or GPU ordinals separated by commas (0,1,...)"
                ))
            })?;
            if list.contains(&d) {
                return Err(Error::InvalidArgument(format!(
                    "devices `{text}`: GPU {d} is named twice"
                )));
            }
            list.push(d);
        }
        Ok(DeviceSet::List(list))
    }
}

/// Splits `n` samples into `parts` contiguous shards as even as can be (the first `n % parts` one
/// sample longer); shards of 0 samples when `n < parts`.
pub fn shards(n: usize, parts: usize) -> Vec<Range<usize>> {
    let parts = parts.max(1);
    let (base, extra) = (n / parts, n % parts);
    let mut start = 0;
    (0..parts)
        .map(|i| {
            let len = base + usize::from(i < extra);
            let r = start..start + len;
            start += len;
            r
        })
        .collect()
}

pub(super) fn slice_samples<'a>(s: Samples<'a>, r: Range<usize>) -> Samples<'a> {
    crate::sample::with_samples!(s, x => Samples::from(&x[r]))
}

pub(super) fn slice_weights<'a>(w: Option<Weights<'a>>, r: Range<usize>) -> Option<Weights<'a>> {
    match w {
        None => None,
        Some(Weights::F32(v)) => Some(Weights::F32(&v[r])),
        Some(Weights::F64(v)) => Some(Weights::F64(&v[r])),
        Some(Weights::Int(v)) => Some(Weights::Int(v.slice(r))),
    }
}
