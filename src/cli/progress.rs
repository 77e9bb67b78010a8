//! Progress on the terminal: the only code that draws. An indicatif
//! spinner on stderr, behind the library's `Progress` trait.

use std::cell::{Cell, RefCell};
use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::analysis::progress::{Progress, Stage};

/// Progress of the searches as an indicatif spinner on stderr: only when
/// stderr is a terminal, and only once a search has run for half a second
/// (most finish sooner, and CI logs must not fill with redraws).
pub struct Spinner {
    enabled: bool,
    started: Instant,
    bar: RefCell<Option<ProgressBar>>,
    stage: Cell<Option<Stage>>,
}

impl Default for Spinner {
    fn default() -> Spinner {
        Spinner::new()
    }
}

impl Spinner {
    pub fn new() -> Spinner {
        Spinner {
            enabled: std::io::stderr().is_terminal(),
            started: Instant::now(),
            bar: RefCell::new(None),
            stage: Cell::new(None),
        }
    }
}

impl Progress for Spinner {
    fn update(&self, stage: Stage, done: u64) {
        if !self.enabled {
            return;
        }
        let mut bar = self.bar.borrow_mut();
        if bar.is_none() {
            if self.started.elapsed() < Duration::from_millis(500) {
                return;
            }
            let pb = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
            if let Ok(style) = ProgressStyle::with_template("{spinner} {elapsed} {msg}: {pos}") {
                pb.set_style(style);
            }
            pb.enable_steady_tick(Duration::from_millis(120));
            *bar = Some(pb);
        }
        if let Some(pb) = bar.as_ref() {
            if self.stage.get() != Some(stage) {
                self.stage.set(Some(stage));
                pb.set_message(stage.label());
            }
            pb.set_position(done);
        }
    }

    fn finish(&self, _stage: Stage) {
        if let Some(pb) = self.bar.borrow_mut().take() {
            pb.finish_and_clear();
        }
        self.stage.set(None);
    }
}
