//! Keeping the router's SCHED_FIFO thread inside the kernel's real-time budget.
//!
//! Linux lets real-time threads run at most `sched_rt_runtime_us` of every `sched_rt_period_us`
//! (950 ms of each second by default) and then stops them until the period ends: real-time
//! throttling (Documentation/scheduler/sched-rt-group.rst). The router spins on the clock for up
//! to its wake-up margin before each due time; at 100 Mbit/s, with a frame due every 120 us
//! one way and an ACK every 240 us the other, that kept it running nearly all the time, and the
//! kernel stopped it for about 50 ms of every second: nothing was forwarded, and the ACKs that
//! waited went out together afterwards. With BBR that burst alone gave a standing queue the
//! simulator never had (docs/fidelity.md, "The emulator's router stopped 50 ms a second").
//!
//! So the router keeps its own account, in windows of a tenth of the kernel's period: once the
//! thread has used `SPIN_SHARE` of a window's share of the runtime, it stops spinning for the
//! rest of that window and sleeps until each due time instead (its frames then leave as late
//! as the host's timer wakes it, which the lateness histogram shows). Any span of one period
//! then holds at most eleven windows' worth, 11 x 0.8 x 95 ms = 836 ms of the default 950 ms,
//! plus the little the thread uses while it only sleeps and forwards.

/// The share of each window's runtime the router may use before it stops spinning.
const SPIN_SHARE: f64 = 0.8;
/// Windows per kernel period.
const WINDOWS_PER_PERIOD: u64 = 10;

/// The router's account of its CPU time against the real-time budget.
#[derive(Debug)]
pub struct SpinBudget {
    window_ns: u64,
    /// CPU time the thread may use in one window before it stops spinning.
    cap_ns: u64,
    window_start_ns: Option<u64>,
    cpu_at_window_start_ns: u64,
    exhausted: bool,
    /// Windows in which the cap was reached (reported in summary.json).
    pub exhausted_windows: u64,
}

impl SpinBudget {
    /// The budget for a kernel period and runtime, in ns.
    pub fn new(period_ns: u64, runtime_ns: u64) -> SpinBudget {
        let window_ns = period_ns / WINDOWS_PER_PERIOD;
        let cap_ns = (runtime_ns as f64 / WINDOWS_PER_PERIOD as f64 * SPIN_SHARE) as u64;
        SpinBudget { window_ns, cap_ns, window_start_ns: None, cpu_at_window_start_ns: 0, exhausted: false, exhausted_windows: 0 }
    }

    /// The budget this host's kernel sets (`/proc/sys/kernel/sched_rt_period_us` and
    /// `sched_rt_runtime_us`); `None` when the files cannot be read.
    pub fn from_kernel() -> Option<SpinBudget> {
        let read = |name: &str| std::fs::read_to_string(format!("/proc/sys/kernel/{name}")).ok()?.trim().parse::<i64>().ok();
        SpinBudget::from_sysctl(read("sched_rt_period_us")?, read("sched_rt_runtime_us")?)
    }

    /// The budget for the two sysctls' values (us); `None` when real-time threads are not
    /// throttled (runtime -1).
    pub fn from_sysctl(period_us: i64, runtime_us: i64) -> Option<SpinBudget> {
        (period_us > 0 && runtime_us >= 0).then(|| SpinBudget::new(period_us as u64 * 1_000, runtime_us as u64 * 1_000))
    }

    /// Whether the loop may spin now, given the clock and the thread's CPU time so far (ns).
    pub fn may_spin(&mut self, now_ns: u64, thread_cpu_ns: u64) -> bool {
        match self.window_start_ns {
            Some(start) if now_ns - start < self.window_ns => {}
            _ => {
                self.window_start_ns = Some(now_ns);
                self.cpu_at_window_start_ns = thread_cpu_ns;
                self.exhausted = false;
            }
        }
        if !self.exhausted && thread_cpu_ns.saturating_sub(self.cpu_at_window_start_ns) >= self.cap_ns {
            self.exhausted = true;
            self.exhausted_windows += 1;
        }
        !self.exhausted
    }
}

/// The calling thread's CPU time in ns (CLOCK_THREAD_CPUTIME_ID).
pub fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes into the timespec we own; the clock exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    /// The kernel's defaults: 950 ms of 1 s; windows of 100 ms, each with 76 ms of CPU.
    fn default_budget() -> SpinBudget {
        SpinBudget::new(1_000 * MS, 950 * MS)
    }

    #[test]
    fn a_thread_spinning_all_the_time_stops_at_four_fifths_of_each_window() {
        let mut b = default_budget();
        let cpu0 = 5_000 * MS; // CPU time used before the first window
        assert!(b.may_spin(0, cpu0));
        assert!(b.may_spin(75 * MS, cpu0 + 75 * MS), "75 of 76 ms used");
        assert!(!b.may_spin(76 * MS, cpu0 + 76 * MS), "the cap");
        assert!(!b.may_spin(99 * MS, cpu0 + 80 * MS), "the rest of the window only sleeps");
        assert!(b.may_spin(100 * MS, cpu0 + 81 * MS), "a new window");
        assert_eq!(b.exhausted_windows, 1);
    }

    /// Spinning whenever allowed, a thread never uses more than the kernel's runtime in any
    /// span of one period, whatever the phase (checked every millisecond over 5 s).
    #[test]
    fn no_period_long_span_exceeds_the_kernel_runtime() {
        let mut b = default_budget();
        let mut cpu = 0u64;
        let mut used = Vec::new(); // CPU used in each millisecond
        for ms in 0..5_000u64 {
            // The loop turns every millisecond. Quiet for the first 450 ms (the worst phase for
            // a naive one-second account), then busy: spinning uses the whole millisecond,
            // sleeping and forwarding a twentieth.
            let may_spin = b.may_spin(ms * MS, cpu);
            let step = if ms < 450 {
                0
            } else if may_spin {
                MS
            } else {
                MS / 20
            };
            cpu += step;
            used.push(step);
        }
        let worst = used.windows(1_000).map(|w| w.iter().sum::<u64>()).max().unwrap();
        assert!(worst < 950 * MS, "{} ms in one period", worst / MS);
        assert!(worst > 700 * MS, "the budget is used, not wasted: {} ms", worst / MS);
    }

    #[test]
    fn an_unthrottled_kernel_gives_no_budget() {
        assert!(SpinBudget::from_sysctl(1_000_000, -1).is_none());
        let b = SpinBudget::from_sysctl(1_000_000, 950_000).expect("throttled");
        assert_eq!((b.window_ns, b.cap_ns), (100 * MS, 76 * MS));
        assert!(thread_cpu_ns() > 0, "the thread's CPU clock");
    }
}
