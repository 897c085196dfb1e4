// claude-code-memory web UI: progressive enhancement only; every page works without it.
(function () {
  "use strict";
  document.addEventListener("change", function (event) {
    var box = event.target;
    if (box.matches && box.matches("input[data-select-all]")) {
      var name = box.getAttribute("data-select-all");
      document.querySelectorAll('input[type="checkbox"][name="' + name + '"]').forEach(function (each) {
        each.checked = box.checked;
      });
    }
  });
  document.addEventListener("click", function (event) {
    var target = event.target;
    if (!target.closest) return;
    var copy = target.closest("[data-copy]");
    if (copy) {
      var field = document.getElementById(copy.getAttribute("data-copy"));
      field.select();
      var done = function () { copy.textContent = "Copied"; setTimeout(function () { copy.textContent = "Copy"; }, 2500); };
      if (navigator.clipboard && window.isSecureContext) {
        navigator.clipboard.writeText(field.value).then(done, function () { document.execCommand("copy"); done(); });
      } else {
        document.execCommand("copy");
        done();
      }
      return;
    }
    var back = target.closest("[data-back]");
    if (back && history.length > 1) {
      event.preventDefault();
      history.back();
    }
  });
  document.addEventListener("submit", function (event) {
    var form = event.target;
    var button = event.submitter;
    // A button may ask its own question (purge, not restore); else the form's.
    var question = (button && button.getAttribute("data-confirm")) ||
      (form.getAttribute && form.getAttribute("data-confirm"));
    if (question && !window.confirm(question)) event.preventDefault();
  });
})();
