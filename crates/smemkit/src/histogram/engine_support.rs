//! Which requests the CUDA engine cannot run yet. They run on the CPU engine under the automatic
//! backend (the report says why) and are one clear error under the CUDA backend, instead of a
//! kernel that would give other bits than numpy.

use crate::backend::Backend;
use crate::error::{Error, Result};
use crate::histogram::bins::{BinSpec, Binning};
use crate::sample::SampleType;

/// Why the CUDA engine cannot run this binning of samples of type `ty`, if it cannot.
pub(crate) fn cuda_gap(binning: &Binning, _ty: SampleType) -> Option<&'static str> {
    match binning {
        Binning::IntEdges(_) => {
            Some("integer edges beyond 2^53 compared exactly with integer samples")
        }
        Binning::UniformF64(u) if u.narrow_type().is_some() => {
            Some("a range of float32 or float16 values for float64 or integer samples")
        }
        _ => None,
    }
}

/// The engine that runs a request whose CUDA gap is `gap`: the CPU under `Auto`, an error under
/// `Cuda`, the caller's choice otherwise. Returns the backend and a note for the report.
pub(crate) fn choose(requested: Backend, gap: Option<&'static str>) -> Result<(Backend, String)> {
    match (requested, gap) {
        (_, None) => Ok((crate::backend::resolve_backend(requested), String::new())),
        (Backend::Cuda, Some(what)) => Err(Error::NotImplemented(format!(
            "{what} on the CUDA engine (not supported there yet; use the CPU backend)"
        ))),
        (_, Some(what)) => Ok((
            Backend::Cpu,
            format!("; the CUDA engine does not take {what} yet"),
        )),
    }
}

/// Requests numpy refuses or that cannot be split: estimated bins with weights (numpy's
/// TypeError), and estimated bins over several ranks or a streamed file (each would estimate from
/// part of the data).
pub(crate) fn check_spec(spec: &BinSpec, weighted: bool, partial_data: bool) -> Result<()> {
    if let BinSpec::Estimated { rule, .. } = spec {
        if weighted {
            return Err(Error::InvalidArgument(format!(
                "automated estimation of the number of bins (`{}`) is not supported for weighted data (numpy refuses it too)",
                rule.name()
            )));
        }
        if partial_data {
            return Err(Error::NotImplemented(format!(
                "estimating bins (`{}`) from data split over ranks or streamed from a file; estimate them first with `estimate_bin_count` on the whole data",
                rule.name()
            )));
        }
    }
    Ok(())
}
