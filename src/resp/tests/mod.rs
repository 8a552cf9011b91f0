//! Tests of the RESP module as a whole: frames, pairing, losses, and properties over random traffic.

mod depth;
mod frames;
mod lagging;
mod losses;
mod pairing;
mod pickup;
mod planted;
mod props;
mod reframing;
mod runs;
mod timing;
mod traffic;
