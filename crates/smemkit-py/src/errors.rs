//! The library's typed errors as the Python exceptions numpy raises in the same situations, each
//! with the library's own message: bad arguments are ValueError, a sample type that cannot take
//! the bins asked for is TypeError, features the library lacks are NotImplementedError, and
//! failures of the GPU runtime are RuntimeError.

use pyo3::exceptions::{
    PyNotImplementedError, PyOSError, PyRuntimeError, PyTypeError, PyValueError,
};
use pyo3::PyErr;
use smemkit::Error;

/// The exception for one library error.
pub fn to_py(error: Error) -> PyErr {
    let message = error.to_string();
    match error {
        Error::IntegerBinsNeedIntegers(_) => PyTypeError::new_err(message),
        Error::NotImplemented(_) => PyNotImplementedError::new_err(message),
        Error::Read { .. } => PyOSError::new_err(message),
        Error::CudaUnavailable(_)
        | Error::DeviceNotFound { .. }
        | Error::MultiGpu(_)
        | Error::Nccl { .. }
        | Error::Cuda { .. }
        | Error::Compile { .. }
        | Error::HostMemory { .. } => PyRuntimeError::new_err(message),
        _ => PyValueError::new_err(message),
    }
}

/// `Result<T, smemkit::Error>` into `PyResult<T>`.
pub trait IntoPy<T> {
    fn py_err(self) -> pyo3::PyResult<T>;
}

impl<T> IntoPy<T> for Result<T, Error> {
    fn py_err(self) -> pyo3::PyResult<T> {
        self.map_err(to_py)
    }
}
