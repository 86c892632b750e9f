/* The account center's menu: on a screen too narrow for every tab, the strip
   scrolls sideways. This brings the current page's tab into view when the
   page opens, and a tab that gets the focus (Tab key) wholly into view:
   browsers leave a tab that is partly in view where it is. Without
   JavaScript every tab is still there, a swipe or a Tab press away.
   No build step. */
(function () {
  "use strict";
  function strip() {
    var nav = document.querySelector(".webauth-account-nav");
    var list = nav && nav.querySelector("ul");
    return list && list.scrollWidth > list.clientWidth ? list : null;
  }
  function showCurrentTab() {
    var list = strip();
    var current = list && list.querySelector('[aria-current="page"]');
    if (!current) return;
    var box = list.getBoundingClientRect();
    var tab = current.getBoundingClientRect();
    list.scrollLeft += tab.left - box.left - (box.width - tab.width) / 2;
  }
  function showFocusedTab(event) {
    var list = strip();
    if (list && event.target.closest && list.contains(event.target)) {
      event.target.scrollIntoView({ block: "nearest", inline: "nearest" });
    }
  }
  function start() {
    showCurrentTab();
    document.addEventListener("focusin", showFocusedTab);
    // A window made narrower (a phone turned): the current tab again, unless the
    // person is moving through the tabs.
    window.addEventListener("resize", function () {
      var list = strip();
      if (list && !list.contains(document.activeElement)) showCurrentTab();
    });
  }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
