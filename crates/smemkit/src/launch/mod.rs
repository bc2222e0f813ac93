//! How several processes find each other: which launcher started them (torchrun, Slurm, Open
//! MPI, PMI, or the explicit `SMEMKIT_*` variables) and so each one's rank, and the rendezvous
//! where rank 0 hands the NCCL unique id to the others, over TCP or through a shared file.
//! Nothing here needs a GPU or NCCL: the payload is bytes, so all of it is tested on the CPU.

pub mod env;
pub mod nodelist;
pub mod tcp;

pub use env::{detect, Launcher, Placement, Rendezvous};
