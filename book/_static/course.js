/* The course's own script: explorer frames load from their files when needed.
   The first frame of an explorer loads lazily (loading="lazy") as the reader scrolls to it;
   the other frames (data-src) load when the reader first points at, taps or focuses the
   explorer, at the latest when a control moves (a capturing listener runs before the
   explorer's own script shows the new frame). Readers who never touch it never load them. */
(function () {
  "use strict";
  function loadFrames(root) {
    if (root.dataset.framesLoaded) { return; }
    root.dataset.framesLoaded = "1";
    // an explorer with a phone layout has two sets of frames: load the set this screen shows
    var phone = window.matchMedia("(max-width: 720px)").matches;
    var skip = phone ? "cu-frame-wide" : "cu-frame-phone";
    root.querySelectorAll("img[data-src]").forEach(function (img) {
      if (img.classList.contains(skip)) { return; }
      img.src = img.getAttribute("data-src");
      img.removeAttribute("data-src");
    });
  }
  function setUp() {
    // the screen turned (phone to wide or back): load the other set on the next touch
    window.matchMedia("(max-width: 720px)").addEventListener("change", function () {
      document.querySelectorAll(".cu-explorer").forEach(function (root) { delete root.dataset.framesLoaded; });
    });
    var explorers = document.querySelectorAll(".cu-explorer");
    explorers.forEach(function (root) {
      ["pointerover", "pointerdown", "focusin", "keydown", "input"].forEach(function (type) {
        root.addEventListener(type, function () { loadFrames(root); }, true);
      });
    });
    window.addEventListener("beforeprint", function () {
      document.querySelectorAll('img[loading="lazy"]').forEach(function (img) { img.loading = "eager"; });
    });
  }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", setUp);
  } else {
    setUp();
  }
})();
