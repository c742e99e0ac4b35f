#!/usr/bin/env bash
# screenshot_class.sh DIR: the small class the screenshots grade (README.md here): seven gallery entries
# named as Canvas downloads submissions (login_USERID_SUBMISSIONID_file), one of them a planted copy of
# another (comments stripped, blank lines doubled), and a Canvas gradebook export with two students
# more than submissions. Writes DIR/class/ and DIR/canvas_roster.csv.
set -euo pipefail
dir=$1
gallery="$(cd "$(dirname "$0")/../gallery" && pwd)"
rm -rf "$dir/class"; mkdir -p "$dir/class"
zip_of() {  # zip_of NAME.zip ENTRY [sed script]: the entry's student/ folder zipped as a student uploads it
  local tmp; tmp=$(mktemp -d); mkdir "$tmp/student"
  for f in "$gallery/$2/student/"*; do sed -e "${3:-}" "$f" > "$tmp/student/$(basename "$f")"; done
  (cd "$tmp" && python3 -m zipfile -c "$dir/class/$1" student/); rm -rf "$tmp"
}
zip_of doejane_1001_700001_scan.zip correct_kogge_stone
zip_of smithjohn_12345_700002_scan.zip wrong_inclusive_exclusive_swapped
mkdir "$dir/class/nguyenan_2002_700003_scan" && cp -r "$gallery/wrong_does_not_compile/student" "$dir/class/nguyenan_2002_700003_scan/"
zip_of garciamaria_4004_700004_scan.zip wrong_missing_syncthreads
zip_of leekim_5005_700005_scan.zip wrong_off_by_one_index
zip_of okaforchidi_6006_700006_scan.zip correct_warp_shuffle
zip_of patelravi_7007_700007_late_scan.zip correct_kogge_stone 's#//.*$##; s/^$/\n/'
cat > "$dir/canvas_roster.csv" <<'CSV'
Student,ID,SIS User ID,SIS Login ID,Section,Homework 1 (20431),Scan lab (20456),Assignments Current Points,Assignments Final Points,Assignments Current Score,Assignments Unposted Current Score,Assignments Final Score,Assignments Unposted Final Score,Current Points,Final Points,Current Score,Unposted Current Score,Final Score,Unposted Final Score
    Points Possible,,,,,10.00,100.00,(read only),(read only),(read only),(read only),(read only),(read only),(read only),(read only),(read only),(read only),(read only),(read only)
"Doe, Jane",1001,S0001001,jdoe,CS 484 Section 1,9.00,,9.00,9.00,90.00,90.00,8.18,8.18,9.00,9.00,90.00,90.00,8.18,8.18
"Smith, John",12345,S0012345,jsmith,CS 484 Section 2,7.50,,7.50,7.50,75.00,75.00,6.82,6.82,7.50,7.50,75.00,75.00,6.82,6.82
"Nguyen, An",2002,S0002002,anguyen,CS 484 Section 1,10.00,,10.00,10.00,100.00,100.00,9.09,9.09,10.00,10.00,100.00,100.00,9.09,9.09
"Garcia, Maria",4004,S0004004,mgarcia,CS 484 Section 2,8.00,,8.00,8.00,80.00,80.00,7.27,7.27,8.00,8.00,80.00,80.00,7.27,7.27
"Lee, Kim",5005,S0005005,klee,CS 484 Section 1,9.50,,9.50,9.50,95.00,95.00,8.64,8.64,9.50,9.50,95.00,95.00,8.64,8.64
"Okafor, Chidi",6006,S0006006,cokafor,CS 484 Section 2,10.00,,10.00,10.00,100.00,100.00,9.09,9.09,10.00,10.00,100.00,100.00,9.09,9.09
"Patel, Ravi",7007,S0007007,rpatel,CS 484 Section 1,6.00,,6.00,6.00,60.00,60.00,5.45,5.45,6.00,6.00,60.00,60.00,5.45,5.45
"Kowalski, Ewa",8008,S0008008,ekowalski,CS 484 Section 2,9.00,,9.00,9.00,90.00,90.00,8.18,8.18,9.00,9.00,90.00,90.00,8.18,8.18
"Student, Test",3990,,5f2c0e8b1a,CS 484 Section 1,,,0.00,0.00,,,0.00,0.00,0.00,0.00,,,0.00,0.00
CSV
echo "$dir/class/ (7 submissions), $dir/canvas_roster.csv (9 students)"
