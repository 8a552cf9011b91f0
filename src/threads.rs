//! How many threads a piece of work may take. A simulation runs its caches on threads of their own, a text
//! trace is parsed on several: on one machine that is what uses its cores. A Dask worker started with one
//! thread runs one task at a time and expects it to take one core; a task that starts threads of its own
//! takes the cores the other workers were given, and adding workers then adds nothing (a sweep of 8 tasks
//! took as long on 2 single-threaded workers as on 1). So the work that starts threads takes a limit:
//! `UNLIMITED` (the serial path: a thread per independent job), or at most that many threads, the caller's
//! own among them (1: everything on the caller's thread).

/// No limit: a thread per job, as the serial path runs.
pub const UNLIMITED: usize = 0;

/// A piece of work that can run beside others.
pub type Job<'a> = Box<dyn FnOnce() + Send + 'a>;

/// Runs every job of `jobs` on at most `limit` threads (`UNLIMITED`: one each), the caller's among them, and
/// returns when all are done. Jobs are dealt in turn to the threads; each thread runs its own in order, and
/// with one thread they run in the order given.
pub fn run_jobs(limit: usize, jobs: Vec<Job<'_>>) {
    let threads = if limit == UNLIMITED { jobs.len() } else { limit.min(jobs.len()) };
    if threads <= 1 {
        jobs.into_iter().for_each(|job| job());
        return;
    }
    let mut shares: Vec<Vec<Job<'_>>> = (0..threads).map(|_| Vec::new()).collect();
    for (i, job) in jobs.into_iter().enumerate() {
        shares[i % threads].push(job);
    }
    let mine = shares.pop().unwrap_or_default();
    std::thread::scope(|s| {
        for share in shares {
            s.spawn(move || share.into_iter().for_each(|job| job()));
        }
        mine.into_iter().for_each(|job| job());
    });
}

/// The limit left to each of `jobs` jobs that run at once under `limit`, for work they start themselves
/// (a fleet's pods, under a simulation's fleets): `UNLIMITED` stays so, else at least one.
pub fn share_of(limit: usize, jobs: usize) -> usize {
    if limit == UNLIMITED {
        UNLIMITED
    } else {
        (limit / jobs.max(1)).max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;
    use std::sync::Mutex;
    use std::thread::ThreadId;

    fn threads_used(limit: usize, jobs: usize) -> (usize, Vec<usize>) {
        let seen = Mutex::new((HashSet::<ThreadId>::new(), Vec::new()));
        let work: Vec<Job<'_>> = (0..jobs)
            .map(|i| {
                let seen = &seen;
                Box::new(move || {
                    // Long enough that a thread started for another job would be running at the same time.
                    std::thread::sleep(std::time::Duration::from_millis(5));
                    let mut s = seen.lock().unwrap();
                    s.0.insert(std::thread::current().id());
                    s.1.push(i);
                }) as Job<'_>
            })
            .collect();
        run_jobs(limit, work);
        let (ids, order) = seen.into_inner().unwrap();
        (ids.len(), order)
    }

    #[test]
    fn one_thread_runs_every_job_on_the_callers_thread_in_order() {
        let (threads, order) = threads_used(1, 7);
        assert_eq!(threads, 1);
        assert_eq!(order, (0..7).collect::<Vec<_>>());
    }

    #[test]
    fn a_limit_bounds_the_threads_and_every_job_runs() {
        let (threads, mut order) = threads_used(3, 10);
        assert_eq!(threads, 3);
        order.sort_unstable();
        assert_eq!(order, (0..10).collect::<Vec<_>>());
    }

    #[test]
    fn unlimited_gives_each_job_a_thread() {
        assert_eq!(threads_used(UNLIMITED, 5).0, 5);
    }

    #[test]
    fn shares_leave_each_job_at_least_one_thread() {
        assert_eq!(share_of(UNLIMITED, 3), UNLIMITED);
        assert_eq!(share_of(1, 3), 1);
        assert_eq!(share_of(8, 3), 2);
    }
}
