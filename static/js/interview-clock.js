// Counts down the suggested time for a mock-interview question. Purely a guide: no submission is
// blocked, and without JavaScript the page simply shows the time allowed.
(function () {
  const clock = document.getElementById("clock");
  if (!clock) return;
  let remaining = parseInt(clock.dataset.minutes, 10) * 60;
  const render = () => {
    const sign = remaining < 0 ? "-" : "";
    const abs = Math.abs(remaining);
    clock.textContent = sign + Math.floor(abs / 60) + ":" + String(abs % 60).padStart(2, "0");
    if (remaining < 0) clock.classList.add("badge-bad");
  };
  render();
  setInterval(() => { remaining -= 1; render(); }, 1000);
})();
