// Counts down the time left for a mock-interview question. A guide, as in a real interview: no
// submission is blocked. It stops at 0:00 (never negative) and stops when the answer is submitted.
// Without JavaScript the page shows the time left when it was loaded.
(function () {
  const clock = document.getElementById("clock");
  if (!clock) return;
  let remaining = Math.max(0, parseInt(clock.dataset.seconds, 10) || 0);
  let timer = null;
  const stop = (state) => {
    if (timer !== null) clearInterval(timer);
    timer = null;
    clock.dataset.state = state;
  };
  const render = () => {
    clock.textContent = Math.floor(remaining / 60) + ":" + String(remaining % 60).padStart(2, "0");
    if (remaining === 0) {
      clock.textContent += " (time is up: finish your sentence and submit)";
      clock.classList.add("badge-bad");
      stop("expired");
    }
  };
  render();
  if (remaining > 0) {
    clock.dataset.state = "running";
    timer = setInterval(() => { remaining = Math.max(0, remaining - 1); render(); }, 1000);
  }
  const form = document.getElementById("interview-answer");
  if (form) form.addEventListener("submit", () => { if (timer !== null) stop("stopped"); });
})();
